"""The quick-start ``ask`` with the embedded store stopped (issue 38): the FalkorDB server's start on the
knowledge base's append-only file as an ingestion leaves it without compaction (every statement logged, replayed
at start) and after ``GraphStore.compact`` (one snapshot), and the CLI's ``kbgraph ask`` on each, cold (server
stopped) and warm (server up), alternating, in one invocation. A third row, "compacted, sequential", asks cold
with ``KnowledgeBase._open_beside`` switched off in that process: the store opened first, then the models
loaded, as before the two overlapped.

    .venv/bin/python -m benchmarks.cold_start [--home DIR] [--repeats 3] [--question "..."]

The examples knowledge base is built once under ``--home`` (default ~/.kbgraph-bench/cold-start, name
``cold-docs``) from examples/docs with compaction off, and its data folder copied to ``<home>/logged`` before
anything else touches it (each measurement of it starts from a fresh copy of ``<home>/logged.pristine``: a server
started on it compacts it); ``<home>/compacted`` is a copy rewritten by BGREWRITEAOF. Later runs reuse both. Each
measurement is a fresh process (``kbgraph ask`` with ``KBGRAPH_DATA_DIR`` on the copy), as a user's shell runs
it; the question is asked once before timing so that its embedding is cached in both states alike. Output: a
JSON line per measurement and a table (median of the repeats) with date, commit and cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.layer_rss import rewrite_aof
from benchmarks.store_bytes import Server, copy_store
from benchmarks.common import DEFAULT_HOME, REPO

from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings
from kbgraph.store import falkor_server
from kbgraph.store.falkor_server import EmbeddedFalkorDB

NAME = "cold-docs"
QUESTION = "How many handgun checks were there in Kentucky in November 2015?"


def build(home: Path) -> None:
    """examples/docs ingested with compaction off, the folder copied as the logged state, then compacted."""
    logged, compacted = home / "logged.pristine", home / "compacted"
    if (logged / "appendonlydir").is_dir() and (compacted / "appendonlydir").is_dir():
        return
    falkor_server.COMPACT_MIN_BYTES = 1 << 62  # this process's ingestion leaves its log as it is
    settings = Settings(home=home, name=NAME)
    t0 = time.perf_counter()
    with KnowledgeBase(settings=settings) as kb:
        report = kb.ingest([REPO / "examples" / "docs"], progress=False)
    print(json.dumps({"ingest_s": round(time.perf_counter() - t0, 1), "documents": report.added}), flush=True)
    EmbeddedFalkorDB(settings.kb_dir).stop()
    copy_store(settings.kb_dir, logged)
    copy_store(settings.kb_dir, compacted)
    server = Server(compacted, NAME)
    rewrite_aof(server)
    server.stop()


def aof_bytes(folder: Path) -> dict[str, int]:
    files = list((folder / "appendonlydir").iterdir())
    return {kind: sum(f.stat().st_size for f in files if f.name.endswith(kind)) for kind in (".rdb", ".aof")}


def server_start(folder: Path) -> float:
    server = EmbeddedFalkorDB(folder, idle_timeout=0)
    server.stop()
    t0 = time.perf_counter()
    server.ensure_running()
    took = time.perf_counter() - t0
    server.stop()
    return took


#: ``kbgraph ask`` as the console script runs it, with the store opened before the models load (no overlap).
SEQUENTIAL = (
    "import sys; import kbgraph.kb as kb; kb.KnowledgeBase._open_beside = lambda self, question: None; "
    "from kbgraph.cli import main; sys.argv[0] = 'kbgraph'; sys.exit(main())"
)


def cli_ask(home: Path, folder: Path, question: str, *, cold: bool, sequential: bool = False) -> float:
    if cold:
        EmbeddedFalkorDB(folder).stop()
    env = {**os.environ, "KBGRAPH_HOME": str(home), "KBGRAPH_NAME": NAME, "KBGRAPH_DATA_DIR": str(folder)}
    argv = [sys.executable, "-c", SEQUENTIAL] if sequential else [str(Path(sys.executable).with_name("kbgraph"))]
    t0 = time.perf_counter()
    subprocess.run([*argv, "ask", question], env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def fresh_logged(home: Path) -> Path:
    """``<home>/logged``: a new copy of the never-started logged state."""
    copy_store(home / "logged.pristine", home / "logged")
    return home / "logged"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, default=DEFAULT_HOME / "cold-start")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--question", default=QUESTION)
    args = ap.parse_args()
    home = args.home.expanduser().resolve()
    build(home)
    states = {"logged": home / "logged", "compacted": home / "compacted"}
    fresh_logged(home)
    for folder in states.values():
        cli_ask(home, folder, args.question, cold=False)  # the question's embedding cached for both
        EmbeddedFalkorDB(folder).stop()
    measures = {
        "logged": (
            ("server start", lambda: server_start(fresh_logged(home))),
            ("cold ask", lambda: cli_ask(home, fresh_logged(home), args.question, cold=True)),
            ("warm ask", lambda: cli_ask(home, home / "logged", args.question, cold=False)),
        ),
        "compacted": (
            ("server start", lambda: server_start(home / "compacted")),
            ("cold ask", lambda: cli_ask(home, home / "compacted", args.question, cold=True)),
            ("warm ask", lambda: cli_ask(home, home / "compacted", args.question, cold=False)),
        ),
        "compacted, sequential": (
            ("cold ask", lambda: cli_ask(home, home / "compacted", args.question, cold=True, sequential=True)),
            ("warm ask", lambda: cli_ask(home, home / "compacted", args.question, cold=False, sequential=True)),
        ),
    }
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.repeats):
        for state, steps in measures.items():
            for what, measure in steps:
                took = measure()
                times.setdefault((state, what), []).append(took)
                print(json.dumps({"state": state, "measure": what, "s": round(took, 3)}), flush=True)
        for folder in states.values():
            EmbeddedFalkorDB(folder).stop()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout
    print(
        f"\n{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit {commit.strip()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}; medians of {args.repeats}"
    )
    print("| append-only file | snapshot / log MB | server start s | cold `kbgraph ask` s | warm `kbgraph ask` s |")
    print("|---|---:|---:|---:|---:|")
    for state in measures:
        size = aof_bytes(home / ("logged.pristine" if state == "logged" else "compacted"))
        med = [
            f"{statistics.median(times[(state, w)]):.2f}" if (state, w) in times else "-"
            for w in ("server start", "cold ask", "warm ask")
        ]
        print(f"| {state} | {size['.rdb'] / 1e6:.1f} / {size['.aof'] / 1e6:.1f} | {' | '.join(med)} |")


if __name__ == "__main__":
    main()
