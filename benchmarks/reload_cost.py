"""What the reload after a compaction costs (setting ``falkor_reload_after_compaction``, issue 56): a fresh
knowledge base of each corpus ingested on the embedded FalkorDB with the reload off, then, in the same process,
the append-only file's rewrite that the ingestion's compaction started waited for, and the reload itself timed
(``FalkorDBStore._reload``: the look for other clients, the server's stop and its start on the snapshot, which
rebuilds every vector and full-text index): the seconds an ingest with the reload on spends after its writes.

    .venv/bin/python -m benchmarks.reload_cost [--corpus docs,2wiki] [--home DIR]

``--home`` (default ~/.kbgraph-bench/reload): ``<home>/<corpus>`` is emptied and ingested anew each run (the
embedding cache of the home is kept, so a second run embeds nothing). Output: a JSON line per corpus (ingest,
rewrite and reload seconds, nodes, append-only file bytes) and a table with date, commit and cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.common import DEFAULT_HOME, EXAMPLES, REPO, corpus_path

from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings
from kbgraph.store.falkor_server import EmbeddedFalkorDB
from kbgraph.store.falkordb import FalkorDBStore

CORPORA = {"docs": EXAMPLES / "docs", "2wiki": corpus_path("2wiki")}


def measure(home: Path, corpus: str) -> dict[str, object]:
    """One corpus: ingest (reload off), wait for the rewrite, reload; seconds rounded to 0.01."""
    settings = Settings(home=home, name=corpus, falkor_reload_after_compaction=False, falkor_idle_timeout=0)
    EmbeddedFalkorDB(settings.kb_dir).stop()
    shutil.rmtree(settings.kb_dir, ignore_errors=True)
    try:
        with KnowledgeBase(settings=settings) as kb:
            t0 = time.perf_counter()
            report = kb.ingest([CORPORA[corpus]], progress=False)
            t1 = time.perf_counter()
            store = kb.store
            assert isinstance(store, FalkorDBStore) and store.server is not None
            store._await_rewrite(600)
            t2 = time.perf_counter()
            reloaded = store._reload(True)
            t3 = time.perf_counter()
            nodes = sum(store.stats().nodes.values())
            aof = store.server.status().aof_bytes
    finally:
        EmbeddedFalkorDB(settings.kb_dir).stop()
    return {
        "corpus": corpus,
        "documents": report.added,
        "nodes": nodes,
        "aof_mb": round(aof / 1e6, 1),
        "ingest_s": round(t1 - t0, 2),
        "rewrite_s": round(t2 - t1, 2),
        "reload_s": round(t3 - t2, 2),
        "reloaded": reloaded,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="docs,2wiki", help="comma-separated: " + ", ".join(CORPORA))
    ap.add_argument("--home", type=Path, default=DEFAULT_HOME / "reload")
    args = ap.parse_args()
    rows = []
    for corpus in args.corpus.split(","):
        row = measure(args.home.expanduser(), corpus.strip())
        print(json.dumps(row), flush=True)
        rows.append(row)
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(f"\n{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {commit}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    print("| corpus | nodes | append-only file MB | ingest s | rewrite s | reload s |\n|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['corpus']} | {r['nodes']:,} | {r['aof_mb']} | {r['ingest_s']} | {r['rewrite_s']} | "
            f"**{r['reload_s']}**{'' if r['reloaded'] else ' (not reloaded)'} |"
        )


if __name__ == "__main__":
    main()
