"""Ingestion past one process (issue 37), measured on this machine: the ray engine against the local one, a Ray
cluster of two nodes, and several writers on one Neo4j knowledge base.

    .venv/bin/python -m benchmarks.scale_out engines [--corpus docs,2wiki] [--workers 2,1] [--questions 50]
    .venv/bin/python -m benchmarks.scale_out cluster [--corpus docs]
    .venv/bin/python -m benchmarks.scale_out writers [--passages 1000] [--files 20]
    .venv/bin/python -m benchmarks.scale_out compare --corpus docs --homes LOCAL_HOME,OTHER_HOME

Every build is a ``kbgraph ingest --json`` process, as a user runs it, with a home of its own and a cold
embedding cache (the ONNX export of the model, made once per machine, is shared); ``seconds`` is that process's
wall time, start included.

``engines`` (FalkorDB): each corpus built by the local engine, then by the ray engine (a local Ray started by the
run, ``--workers`` CPUs each; ``ingest_workers``; with ``--pin`` a build of N workers runs on N cores, as a host of
N cores would: the run, its Ray and the embedded store's server all pinned by ``taskset``). Each ray build is compared with the local one: node counts per
label and relationship counts per type (the ``IngestionRun`` aside), and the top-10 chunk ids of ``propagation``
for ``--questions`` questions (2wiki: the first of dev500.questions.jsonl; docs: the first sentence of every
k-th chunk of the local build, in chunk-id order, so that they are about the documents).

``cluster``: a Ray cluster of two nodes on this machine (``ray start --head --num-cpus 1`` and ``ray start
--address ... --num-cpus 1``, each its own raylet), the corpus ingested into it (``--ray-address``), then Ray's
state API (``ray.util.state.list_tasks``) counts the tasks of the run per node; the graph is compared with a
local-engine build as in ``engines``.

``writers`` (Neo4j, a scratch local server): the first ``--passages`` passages of the 2Wiki corpus as ``--files``
.jsonl files (a file is a claim), then (1) one ``kbgraph ingest`` with ``ingest_writers=claims`` pinned to core 0
(``taskset``), (2) two at once, one pinned to each core, each with a home of its own (two hosts of one core each;
Neo4j itself unpinned), (3) two at once, in groups of 2 files, with one killed (SIGKILL) once a quarter of the
passages are written and it holds a claim on a file none of whose passages is complete (its claims made to look
held on another machine, so they must expire), then a re-run of the other writer's home after the claims' TTL. After each: node and relationship counts against
build (1), duplicate ``Entity`` ids, documents not complete, claims left.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import DEFAULT_HOME, EXAMPLES, REPO, set_path

ROOT = REPO
TWOWIKI = set_path("2wiki").parent
MODELS = Path.home() / ".kbgraph" / "models"  # the ONNX export, made once per machine
NEO4J_HOME = DEFAULT_HOME / "neo4j-writers"
NEO4J_BOLT, NEO4J_HTTP, NEO4J_PASSWORD = 17693, 17483, "kbgraph-bench"
#: A run's bookkeeping nodes: one per run, so builds by different numbers of runs differ there by design.
RUN_LABELS = {"IngestionRun", "IngestLease", "IngestClaim"}
#: --limit: the first N passages of the 2Wiki corpus only (engines, cluster); 0 = all of it.
LIMIT = 0


# --- one build ----------------------------------------------------------------------------------------
def _home(root: Path, name: str) -> Path:
    home = root / name
    home.mkdir(parents=True, exist_ok=True)
    if MODELS.is_dir() and not (home / "models").exists():
        (home / "models").symlink_to(MODELS, target_is_directory=True)
    return home


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "KBGRAPH_HOME": str(home),
        "KBGRAPH_NAME": "bench",
        "KBGRAPH_FALKOR_IDLE_TIMEOUT": "0",
        "KBGRAPH_EMBEDDING_CACHE_DIR": str(home / "embed-cache"),
        **extra,
    }


def _start(
    env: dict[str, str], sources: list[Path], out: Path, cpu: int | str | None = None
) -> subprocess.Popen[bytes]:
    """``kbgraph ingest --json sources`` in the background (pinned to the cores ``cpu`` when given, taskset's list
    form: its children, the embedded store's server and the Ray it starts, inherit it); stdout -> ``out``, stderr
    -> ``out``.log."""
    cmd = [sys.executable, "-m", "kbgraph.cli", "ingest", "--json", *map(str, sources)]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    with open(out, "wb") as fh, open(out.with_suffix(".log"), "wb") as err:
        return subprocess.Popen(cmd, env=env, stdout=fh, stderr=err)


def _finish(proc: subprocess.Popen[bytes], out: Path) -> dict[str, Any]:
    if proc.wait() != 0:
        sys.exit(f"ingest failed (exit {proc.returncode}):\n{out.with_suffix('.log').read_text()[-4000:]}")
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return report


def _ingest(
    env: dict[str, str], sources: list[Path], out: Path, cpu: int | str | None = None
) -> tuple[float, dict[str, Any]]:
    t0 = time.monotonic()
    report = _finish(_start(env, sources, out, cpu), out)
    return time.monotonic() - t0, report


def _graph(settings: Any, questions: list[str] | None) -> dict[str, Any]:
    """Counts per label and per relationship type (runs aside) and the top-10 chunk ids per question."""
    from kbgraph.kb import KnowledgeBase

    with KnowledgeBase(settings=settings) as kb:
        stats = kb.stats()
        top = [[c.id for c in kb.retrieve(q, k=10)] for q in questions or []]
    return {
        "nodes": {k: v for k, v in sorted(stats.nodes.items()) if k not in RUN_LABELS},
        "relationships": dict(sorted(stats.relationships.items())),
        "top": top,
    }


def _stop_falkordb(home: Path) -> None:
    """Stop the build's embedded FalkorDB server (each build has its own; they would add up in memory)."""
    from kbgraph.store.falkor_server import EmbeddedFalkorDB

    EmbeddedFalkorDB(_settings(home).kb_dir).stop()


def _settings(home: Path) -> Any:
    from kbgraph.settings import Settings

    return Settings(home=home, name="bench", falkor_idle_timeout=0, embedding_cache_dir=home / "embed-cache")


def _compare(base: dict[str, Any], other: dict[str, Any]) -> str:
    same_counts = base["nodes"] == other["nodes"] and base["relationships"] == other["relationships"]
    same_top = sum(a == b for a, b in zip(base["top"], other["top"], strict=True))
    diff = (
        ""
        if same_counts
        else f" nodes {_diff(base['nodes'], other['nodes'])} rels {_diff(base['relationships'], other['relationships'])}"
    )
    return (
        f"counts {'equal' if same_counts else 'DIFFER'}{diff}; top-10 equal for {same_top}/{len(base['top'])} questions"
    )


def _diff(a: dict[str, int], b: dict[str, int]) -> dict[str, tuple[int, int]]:
    return {k: (a.get(k, 0), b.get(k, 0)) for k in sorted(set(a) | set(b)) if a.get(k, 0) != b.get(k, 0)}


def _corpus(name: str, tmp: Path) -> tuple[Path, int]:
    if name == "docs":
        folder = EXAMPLES / "docs"
        return folder, sum(1 for p in folder.rglob("*") if p.is_file() and p.suffix != ".md")
    lines = (TWOWIKI / "dev500.corpus.jsonl").read_text(encoding="utf-8").splitlines()
    if not LIMIT:
        return TWOWIKI / "dev500.corpus.jsonl", len(lines)
    part = tmp / f"2wiki-first{LIMIT}.corpus.jsonl"
    part.write_text("\n".join(lines[:LIMIT]) + "\n", encoding="utf-8")
    return part, min(LIMIT, len(lines))


def _questions(name: str, base_settings: Any, n: int) -> list[str]:
    if name != "docs":
        rows = [json.loads(x) for x in (TWOWIKI / "dev500.questions.jsonl").read_text(encoding="utf-8").splitlines()]
        return [r["question"] for r in rows[:n]]
    from kbgraph.kb import KnowledgeBase

    with KnowledgeBase(settings=base_settings) as kb:
        rows = kb.store.run("bench/chunk_texts")
    out: list[str] = []
    for start in range(max(1, len(rows) // n)):  # every k-th chunk, then the ones after them, until n questions
        for r in rows[start :: max(1, len(rows) // n)]:
            sentence = " ".join(str(r["text"]).split())[:300].split(". ")[0]
            if len(sentence) >= 20 and sentence not in out:
                out.append(sentence)
            if len(out) == n:
                return out
    return out


# --- engines -------------------------------------------------------------------------------------------
def engines(args: argparse.Namespace, tmp: Path) -> None:
    print(f"{'corpus':8} {'engine':8} {'workers':>7} {'seconds':>8} {'items/s':>8}  vs local", flush=True)
    for name in args.corpus.split(","):
        src, n = _corpus(name, tmp)
        home = _home(tmp, f"{name}-local")
        wall, _ = _ingest(_env(home), [src], tmp / f"{name}-local.json")
        questions = _questions(name, _settings(home), args.questions)
        base = _graph(_settings(home), questions)
        _stop_falkordb(home)
        print(
            f"{name:8} {'local':8} {'-':>7} {wall:8.1f} {n / wall:8.2f}  {sum(base['nodes'].values())} nodes, "
            f"{sum(base['relationships'].values())} relationships, {len(questions)} questions",
            flush=True,
        )
        for workers in [int(w) for w in args.workers.split(",")]:
            home = _home(tmp, f"{name}-ray{workers}")
            wall, _ = _ingest(
                _env(home, KBGRAPH_INGEST_ENGINE="ray", KBGRAPH_INGEST_WORKERS=str(workers)),
                [src],
                tmp / f"{name}-ray{workers}.json",
                cpu=f"0-{workers - 1}" if args.pin else None,
            )
            got = _graph(_settings(home), questions)
            _stop_falkordb(home)
            print(f"{name:8} {'ray':8} {workers:7d} {wall:8.1f} {n / wall:8.2f}  {_compare(base, got)}", flush=True)


# --- compare -------------------------------------------------------------------------------------------
def compare(args: argparse.Namespace, tmp: Path) -> None:
    """Two kept builds of one corpus (``--homes A,B``, A by the local engine): counts and top-10 compared."""
    a, b = (Path(h) for h in args.homes.split(","))
    questions = _questions(args.corpus, _settings(a), args.questions)
    base = _graph(_settings(a), questions)
    got = _graph(_settings(b), questions)
    _stop_falkordb(a)
    _stop_falkordb(b)
    print(f"{b.name} against {a.name}: {_compare(base, got)}")


# --- cluster -------------------------------------------------------------------------------------------
def cluster(args: argparse.Namespace, tmp: Path) -> None:
    src, n = _corpus(args.corpus, tmp)
    if args.local_home:  # the local-engine build of the same corpus made by an `engines` run
        local = Path(args.local_home)
    else:
        local = _home(tmp, f"{args.corpus}-local")
        wall, _ = _ingest(_env(local), [src], tmp / f"{args.corpus}-local.json")
        print(f"local engine: {wall:.1f} s ({n / wall:.2f} items/s)", flush=True)
    questions = _questions(args.corpus, _settings(local), args.questions)
    base = _graph(_settings(local), questions)
    _stop_falkordb(local)
    ray_bin = Path(sys.executable).with_name("ray")
    port, dashboard = 6390, 8266  # outside Ray's worker ports (10002-19999)
    # a cluster started by `ray start --head` (Ray >= 2.5x) authenticates with a token it writes to ~/.ray/auth_token;
    # the other node, the ingest and this script read it there once RAY_AUTH_MODE says so
    os.environ["RAY_AUTH_MODE"] = "token"
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    head = [
        str(ray_bin),
        "start",
        "--head",
        "--num-cpus",
        "1",
        "--port",
        str(port),
        "--temp-dir",
        str(tmp / "ray"),
        "--include-dashboard",
        "true",
        "--dashboard-port",
        str(dashboard),
        "--disable-usage-stats",
    ]
    worker = [str(ray_bin), "start", "--address", f"127.0.0.1:{port}", "--num-cpus", "1", "--disable-usage-stats"]
    subprocess.run(head, env=env, check=True, capture_output=True)
    try:
        subprocess.run(worker, env=env, check=True, capture_output=True)
        from ray.util.state import list_nodes, list_tasks

        address = f"http://127.0.0.1:{dashboard}"
        deadline = time.monotonic() + 60
        while len(nodes := list_nodes(address=address)) < 2 and time.monotonic() < deadline:
            time.sleep(1)
        names = {nd.node_id: ("head" if nd.is_head_node else "worker") for nd in nodes}
        print(
            f"cluster: {len(nodes)} nodes ({', '.join(f'{v} {k[:8]}' for k, v in names.items())}), 1 CPU each",
            flush=True,
        )
        home = _home(tmp, f"{args.corpus}-cluster")
        wall, _ = _ingest(
            _env(home, KBGRAPH_INGEST_ENGINE="ray", KBGRAPH_RAY_ADDRESS=f"127.0.0.1:{port}"),
            [src],
            tmp / f"{args.corpus}-cluster.json",
        )
        per_node: dict[tuple[str, str], int] = {}
        for task in list_tasks(address=address, limit=10000, raise_on_missing_output=False):
            key = (names.get(task.node_id or "", str(task.node_id)), f"{task.type} {task.name}"[:90])
            per_node[key] = per_node.get(key, 0) + 1
        print(
            f"ingest on the cluster: {wall:.1f} s ({n / wall:.2f} items/s); tasks per node (ray.util.state.list_tasks):"
        )
        for (node, task_name), count in sorted(per_node.items()):
            print(f"  {node:6} {count:5d}  {task_name}")
        got = _graph(_settings(home), questions)
        _stop_falkordb(home)
    finally:
        subprocess.run([str(ray_bin), "stop", "--force"], env=env, capture_output=True)
    print(f"cluster build against the local one: {_compare(base, got)}")


# --- writers -------------------------------------------------------------------------------------------
def writers(args: argparse.Namespace, tmp: Path) -> None:
    from kbgraph.neo4j_local import Neo4jLocal
    from kbgraph.settings import Settings

    folder = tmp / "corpus"
    folder.mkdir()
    lines = (TWOWIKI / "dev500.corpus.jsonl").read_text(encoding="utf-8").splitlines()[: args.passages]
    per = -(-len(lines) // args.files)
    for i in range(args.files):
        (folder / f"part{i:03d}.jsonl").write_text("\n".join(lines[i * per : (i + 1) * per]) + "\n", encoding="utf-8")
    base = Settings(
        home=_home(tmp, "driver"),
        neo4j_local_home=NEO4J_HOME,
        neo4j_bolt_port=NEO4J_BOLT,
        neo4j_http_port=NEO4J_HTTP,
        neo4j_password=NEO4J_PASSWORD,
    )
    local = Neo4jLocal(base, lib_dir=Path.home() / ".kbgraph" / "neo4j-local" / "lib")
    settings = base.updated({"uri": local.start(timeout=180).bolt_uri})
    extra = {
        "KBGRAPH_URI": str(settings.store.uri),
        "NEO4J_PASSWORD": NEO4J_PASSWORD,
        "KBGRAPH_INGEST_WRITERS": "claims",
    }
    try:
        from kbgraph.kb import KnowledgeBase

        def reset() -> None:
            with KnowledgeBase(settings=settings) as kb:
                kb.reset()

        def check() -> dict[str, Any]:
            with KnowledgeBase(settings=settings) as kb:
                run = kb.store.run
                graph = _graph(settings, None)
                graph["duplicate_entities"] = len(run("bench/duplicate_entities"))
                graph["not_complete"] = len(run("bench/incomplete_documents"))
                graph["claims_left"] = len(run("bench/ingest_claims"))
            return graph

        def home(name: str) -> Path:
            h = tmp / name
            shutil.rmtree(h, ignore_errors=True)
            return _home(tmp, name)

        reset()
        wall1, r1 = _ingest(_env(home("one"), **extra), [folder], tmp / "one.json", cpu=0)
        one = check()
        print(
            f"one writer (core 0): {wall1:.1f} s, {len(lines) / wall1:.2f} passages/s, added {r1['added']}; "
            f"{sum(one['nodes'].values())} nodes, duplicates {one['duplicate_entities']}",
            flush=True,
        )

        reset()
        t0 = time.monotonic()
        procs = [
            (_start(_env(home(f"two{i}"), **extra), [folder], tmp / f"two{i}.json", cpu=i), tmp / f"two{i}.json")
            for i in range(2)
        ]
        reports = [_finish(p, out) for p, out in procs]
        wall2 = time.monotonic() - t0
        two = check()
        print(
            f"two writers (core 0, core 1): {wall2:.1f} s = {wall2 / wall1:.2f}x one writer's wall, "
            f"{len(lines) / wall2:.2f} passages/s, added {[r['added'] for r in reports]}; against one writer: "
            f"{_compare(one, {**two, 'top': []})}; duplicates {two['duplicate_entities']}, not complete "
            f"{two['not_complete']}, claims left {two['claims_left']}",
            flush=True,
        )

        reset()
        ttl = "30"
        a_out, b_out = tmp / "kill-a.json", tmp / "kill-b.json"
        small = {
            "KBGRAPH_INGEST_GROUP_SIZE": str(2 * per)
        }  # groups of 2 files: a writer holds claims it has not written
        env_a = _env(home("kill-a"), **extra, **small, KBGRAPH_LEASE_TTL=ttl)
        env_b = _env(home("kill-b"), **extra, **small, KBGRAPH_LEASE_TTL=ttl)
        a = _start(env_a, [folder], a_out, cpu=0)
        b = _start(env_b, [folder], b_out, cpu=1)
        with KnowledgeBase(settings=settings) as kb:
            while True:  # a quarter written, and a holds a claim on a file none of whose passages is complete
                held = kb.store.run("bench/held_claims", {"pid": a.pid})
                if kb.stats().nodes.get("Document", 0) >= len(lines) // 4 and any(r["complete"] == 0 for r in held):
                    break
                if a.poll() is not None:
                    sys.exit("writer a finished before the kill")
                time.sleep(0.2)
            # its claims look held on another machine, whose death nobody here can see: they must expire
            kb.store.run("bench/move_claims", {"machine": "another machine"})
            held = kb.store.run("bench/held_claims", {"pid": a.pid})
        os.kill(a.pid, signal.SIGKILL)
        a.wait()
        t_kill = time.monotonic()
        rb = _finish(b, b_out)
        skipped = sum(1 for f in rb["files"] if f["outcome"] == "skipped")
        print(
            f"writer a killed holding {len(held)} claims ({sum(r['complete'] == 0 for r in held)} of files none of "
            f"whose passages was complete); writer b finished {time.monotonic() - t_kill:.1f} s later, "
            f"added {rb['added']}, skipped {skipped} (claimed)",
            flush=True,
        )
        time.sleep(max(0.0, int(ttl) + 2 - (time.monotonic() - t_kill)))
        wall3, rerun = _ingest(env_b, [folder], b_out.with_name("kill-b2.json"), cpu=1)
        after = check()
        print(
            f"re-run of b after the TTL: {wall3:.1f} s, added {rerun['added']}, outcomes "
            f"{_outcomes(rerun)}; against one writer: {_compare(one, {**after, 'top': []})}; duplicates "
            f"{after['duplicate_entities']}, not complete {after['not_complete']}, claims left {after['claims_left']}"
        )
        reset()
    finally:
        local.stop()


def _outcomes(report: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in report["files"]:
        out[f["outcome"]] = out.get(f["outcome"], 0) + 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", choices=["engines", "cluster", "writers", "compare"])
    ap.add_argument("--corpus", default=None, help="engines: docs,2wiki; cluster: docs")
    ap.add_argument("--workers", default="2,1", help="engines: ingest_workers of the ray builds")
    ap.add_argument("--questions", type=int, default=50)
    ap.add_argument(
        "--pin",
        action="store_true",
        help="engines: a ray build of N workers runs on cores 0..N-1 only "
        "(taskset: a host of N cores), the local build on all",
    )
    ap.add_argument("--passages", type=int, default=1000, help="writers: passages of the 2Wiki corpus")
    ap.add_argument("--files", type=int, default=20, help="writers: .jsonl files they are split into")
    ap.add_argument("--limit", type=int, default=0, help="engines, cluster: the first N 2Wiki passages only")
    ap.add_argument("--homes", help="compare: two kept builds' homes, the local engine's first")
    ap.add_argument("--local-home", help="cluster: the home of a local-engine build of the corpus to compare with")
    ap.add_argument("--keep", help="a folder for the builds (kept); default a temporary one")
    args = ap.parse_args()
    global LIMIT
    LIMIT = args.limit
    args.corpus = args.corpus or ("docs,2wiki" if args.part == "engines" else "docs")
    print(
        f"{time.strftime('%Y-%m-%d %H:%M')} {os.cpu_count()} cores, scale_out.py {' '.join(sys.argv[1:])}", flush=True
    )
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(args.keep) if args.keep else Path(t)
        tmp.mkdir(parents=True, exist_ok=True)
        {"engines": engines, "cluster": cluster, "writers": writers, "compare": compare}[args.part](args, tmp)


if __name__ == "__main__":
    main()
