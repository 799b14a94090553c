"""Ingestion throughput, offline (no LLM): a multi-hop passage corpus (or the sample documents) into a fresh
knowledge base, per store. Issue 15's goals (2 cores): 3,301 2Wiki passages <= 180 s end to end and <= 2.5x the
time the same run's chunks take to embed alone; graph writes <= 15 % of the total; peak RSS <= 1.5 GB.

    .venv/bin/python -m benchmarks.ingest [--corpus 2wiki|musique|hotpotqa|docs] [--stores falkordb,neo4j]
        [--limit N] [--no-cache] [--compare-overlap] [--before KEY=VALUE[,KEY=VALUE...]]
        [--engine local,ray] [--workers N] [--fresh-models]

Printed per run: seconds end to end, items/s, seconds per stage (parse, chunk, distill, embed, write: the
writes' own time wherever they ran), ``wait`` (the time the run's main thread spent on writes: its own writes
plus waiting for a write running in the background, setting ``ingest_overlap_writes``), ``write%`` = wait / total
(the writes' share of the wall time), ``chunks`` (the same run's chunk texts embedded alone, after the ingest,
by the same embedder: model loaded, no cache, one call) and ``ratio`` = total / chunks, and the peak RSS of
the run: ``rss`` of the ingesting process (ru_maxrss of itself), ``fork`` of its forked distill workers (the
largest ru_maxrss of one, pages it shares with the parent included; '-' when none forked), ``server`` of the
database server (VmHWM of the FalkorDB redis process, a fresh one per run, or of the Neo4j JVM, which lives on
across the runs of one store). ``groups``: the units of work written (one per group of ``ingest_group_size``
documents / ``ingest_group_chars`` characters; overlap needs several). ``--compare-overlap``: each store also
runs with overlapped writes off (before) then on (after). ``--before``: each store also runs with these settings
first (e.g. ``late_chunking=false``: the defaults before a change), then with the defaults, in the same
invocation (the ``variant`` column names the settings of each row). A last line breaks the ingesting process's
RSS down: the interpreter with kbgraph imported, + the embedder, + the spaCy pipeline (a separate small process).
``--engine local,ray``: each store runs once per engine (setting ``ingest_engine``; ray: a local Ray with
``--workers`` CPUs, started inside the run and counted in its seconds). With ray the stage columns are the workers'
seconds summed (they run at once), ``rss`` is the run's own process only (not the Ray workers) and ``fork`` is '-'.

Each run ingests in its own process (``--child``, started by this script) so its RSS is its own; the store's
server is started by this script and reset before each run. Each run starts with its own empty embedding cache:
a cold first ingest as a user gets it (a text that recurs in the run, e.g. an entity name in many passages, is
embedded once). --no-cache embeds every text every time it occurs. The Neo4j server is a scratch one
(~/.kbgraph-bench/neo4j-ingest, bolt 17690).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import DEFAULT_HOME, EXAMPLES, REPO, SETS, corpus_path, rerun

#: "docs" = the sample documents folder (examples/docs: PDFs, DOCX, HTML), the README's quick start; the others
#: the repo sets' corpora (benchmarks.common)
CORPORA = ("docs", *SETS)
GB = 1024 * 1024  # ru_maxrss and /proc sizes are in KiB


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="2wiki", choices=sorted(CORPORA))
    ap.add_argument("--stores", default="falkordb,neo4j")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--no-cache", dest="cache", action="store_false", help="no embedding cache")
    ap.add_argument("--compare-overlap", action="store_true", help="also run with overlapped writes off (before)")
    ap.add_argument("--before", default="", help="KEY=VALUE[,KEY=VALUE...]: also run with these settings (before)")
    ap.add_argument("--engine", default="local", help="local,ray: one run per engine (setting ingest_engine)")
    ap.add_argument("--workers", type=int, default=2, help="ingest_workers of the ray engine (a local Ray)")
    ap.add_argument(
        "--fresh-models",
        action="store_true",
        help="each run in a home of its own with no models made: it makes the ONNX export and the static "
        "model as a fresh home's first ingest does (otherwise ~/.kbgraph/models, made once)",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)  # internal: one run, settings as JSON; prints RESULT {...}
    ap.add_argument("--rss-probe", action="store_true", help=argparse.SUPPRESS)  # internal: RSS breakdown
    args = ap.parse_args()
    if args.child:
        return _child(json.loads(args.child))
    if args.rss_probe:
        return _rss_probe()
    src = EXAMPLES / "docs" if args.corpus == "docs" else corpus_path(args.corpus)
    with tempfile.TemporaryDirectory() as tmp:
        if src.is_dir():  # a folder of documents: ingested as it is (--limit does not apply)
            corpus = src.resolve()
            lines = [p for p in corpus.rglob("*") if p.is_file()]
        else:
            corpus = Path(tmp) / src.name
            lines = src.read_text(encoding="utf-8").splitlines()
            if args.limit:
                lines = lines[: args.limit]
            corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
        exported = Path.home() / ".kbgraph" / "models"  # the ONNX export is made once per machine, not per run
        if exported.is_dir() and not args.fresh_models:
            (Path(tmp) / "models").symlink_to(exported, target_is_directory=True)
        texts = Path(tmp) / "chunk_texts.json"
        texts.write_text(json.dumps(_chunk_texts(corpus, Path(tmp))), encoding="utf-8")
        rows = []
        for store in args.stores.split(","):
            rows += _store_runs(store, corpus, texts, Path(tmp), len(lines), args)
        breakdown = _run_probe()
    unit = "files" if src.is_dir() else "passages"
    print(
        f"\ncorpus {args.corpus}: {len(lines):,} {unit}, embedding cache {'on' if args.cache else 'off'}, "
        f"{os.cpu_count()} cores"
    )
    print(HEADER)
    for row in rows:
        print(_line(row, len(lines)) + f"  {row['variant']}")
    print("goals: <= 180 s for 3,301 passages; ratio <= 2.5x; write% <= 15 %; peak RSS <= 1.5 GB")
    print(f"RSS of an ingesting process before any data: {breakdown}")
    by_store = {r["store"]: r for r in rows if r["variant"] == "default"}
    if len(by_store) == 2:
        print(f"Neo4j/FalkorDB wall-time ratio: {by_store['neo4j']['wall'] / by_store['falkordb']['wall']:.2f}x")


# --- the parent: servers, runs, table ----------------------------------------------------------------
def _settings(store: str, tmp: Path, cache: bool, n: int, fresh: bool = False) -> dict[str, Any]:
    """The run's settings as JSON-able overrides (the child builds ``Settings(**overrides)``); everything else,
    overlapped writes included, is the default unless a variant (``--compare-overlap``, ``--before``) sets it."""
    over: dict[str, Any] = {
        "home": str(tmp / f"fresh_{n}" if fresh else tmp),
        "name": f"bench_{store}",
        "falkor_idle_timeout": 0,
        "embedding_cache": cache,
        "embedding_cache_dir": str(tmp / f"cache_{store}_{n}"),
    }
    if store == "neo4j":
        over.update(
            {
                "neo4j_local_home": str(DEFAULT_HOME / "neo4j-ingest"),
                "neo4j_bolt_port": 17690,
                "neo4j_http_port": 17477,
                "neo4j_password": "kbgraph-bench",
            }
        )
    return over


def _store_runs(store: str, corpus: Path, texts: Path, tmp: Path, n_items: int, args) -> list[dict]:
    """Start ``store``'s server, run the ingest (overlap off then on with --compare-overlap) each in a child
    process on a reset knowledge base, stop the server; the runs' result rows."""
    from kbgraph.ingest.engines import DEFAULT_ENGINE
    from kbgraph.kb import KnowledgeBase
    from kbgraph.settings import Settings

    rows = []
    variants: list[tuple[str, dict[str, Any]]] = []
    if args.compare_overlap:
        variants.append(("ingest_overlap_writes=false", {"ingest_overlap_writes": False}))
    if args.before:
        pairs = [kv.split("=", 1) for kv in args.before.split(",") if kv.strip()]
        variants.append((args.before, {k.strip(): v.strip() for k, v in pairs}))
    for engine in (e.strip() for e in args.engine.split(",")):
        if engine == DEFAULT_ENGINE:
            variants.append(("default", {}))
        else:  # another engine of kbgraph.ingest.engines (ray: a local Ray of --workers CPUs)
            variants.append(
                (
                    f"ingest_engine={engine},ingest_workers={args.workers}",
                    {"ingest_engine": engine, "ingest_workers": args.workers},
                )
            )
    base = Settings(**_settings(store, tmp, args.cache, 0))
    local = None
    if store == "neo4j":
        from kbgraph.neo4j_local import Neo4jLocal

        local = Neo4jLocal(base, lib_dir=Path.home() / ".kbgraph" / "neo4j-local" / "lib")
        base = base.updated({"uri": local.start(timeout=180).bolt_uri})
    try:
        for i, (variant, extra) in enumerate(variants):
            over = {
                **_settings(store, tmp, args.cache, i, args.fresh_models),
                **extra,
                **({"uri": base.store.uri} if base.store.uri else {}),
            }
            settings = Settings(**over)
            with KnowledgeBase(settings=settings) as kb:
                kb.reset()  # starts the embedded server if needed; an empty graph
            out = subprocess.run(
                [
                    *rerun(__file__),
                    "--child",
                    json.dumps({"settings": over, "corpus": str(corpus), "texts": str(texts)}),
                ],
                capture_output=True,
                text=True,
                cwd=REPO,
            )
            result = next((json.loads(x[7:]) for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
            if out.returncode != 0 or result is None:
                sys.exit(f"the {store} run failed (exit {out.returncode}):\n{out.stderr[-4000:]}")
            result.update(
                store=store,
                overlap=settings.ingest.ingest_overlap_writes,
                variant=variant,
                server_gb=_server_peak_gb(store, settings, local),
            )
            rows.append(result)
            if i == 0:
                print(HEADER)
            print(_line(result, n_items) + f"  {variant}", flush=True)
            print(f"          nodes {result['nodes']}", flush=True)
            with KnowledgeBase(settings=settings) as kb:
                kb.reset()
            if store == "falkordb":  # a fresh server per run: its peak RSS is this run's
                from kbgraph.store.falkor_server import EmbeddedFalkorDB

                EmbeddedFalkorDB(settings.kb_dir).stop()
    finally:
        if local is not None:
            local.stop()
        else:
            from kbgraph.store.falkor_server import EmbeddedFalkorDB

            EmbeddedFalkorDB(base.kb_dir).stop()
    return rows


def _server_peak_gb(store: str, settings, local) -> float | None:
    """VmHWM of the store's server process (GB), None when unknown."""
    if local is not None:
        pid = local.status().pid
    else:
        from kbgraph.store.falkor_server import EmbeddedFalkorDB

        pid = EmbeddedFalkorDB(settings.kb_dir).status().pid
    return _vm(pid, "VmHWM") if pid else None


def _vm(pid: int | str, field: str) -> float | None:
    """``field`` (VmRSS, VmHWM) of /proc/<pid>/status in GB, None when unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / GB
    except (OSError, ValueError):
        pass
    return None


def _chunk_texts(corpus: Path, tmp: Path) -> list[str]:
    """The texts the Chunk layer embeds for ``corpus`` (as ``kbgraph.ingest.embed_layers``): parsed and
    chunked as the pipeline does with default settings and no LLM."""
    from kbgraph.ingest.chunk import build_structure
    from kbgraph.ingest.parse import parse_file, parse_passages_jsonl
    from kbgraph.ingest.sources import discover
    from kbgraph.ingest.unchanged import is_corpus
    from kbgraph.settings import Settings
    from kbgraph.text import index_text

    s = Settings(home=tmp)
    texts: list[str] = []
    for path in discover([corpus], [], []):
        try:
            docs = (
                list(parse_passages_jsonl(path))
                if is_corpus(path)
                else [parse_file(path, max_bytes=s.ingest.max_file_bytes)]
            )
        except Exception:  # a file the ingest fails too
            continue
        for doc in docs:
            document, _, chunks = build_structure(
                doc, chunk_tokens=s.ingest.chunk_tokens, overlap_sentences=s.ingest.chunk_overlap_sentences, llm=None
            )
            texts += [index_text(document.title, c.section_path, c.kind, c.text, c.summary) for c in chunks]
    return texts


HEADER = (
    f"{'store':9} {'overlap':7} {'seconds':>7} {'items/s':>7} {'parse':>6} {'chunk':>6} {'distill':>7} "
    f"{'embed':>6} {'write':>6} {'wait':>6} {'write%':>6} {'chunks':>6} {'ratio':>6} {'rss':>5} {'fork':>5} "
    f"{'server':>6} {'groups':>6} {'failed':>6}  variant"
)


def _line(r: dict, n: int) -> str:
    s, wall = r["seconds"], r["wall"]
    gb = lambda v: f"{v:5.2f}" if v is not None else "    -"  # noqa: E731
    return (
        f"{r['store']:9} {'on' if r['overlap'] else 'off':7} {wall:7.1f} {n / wall:7.1f} {s['parse']:6.1f} "
        f"{s['chunk']:6.1f} {s['distill']:7.1f} {s['embed']:6.1f} {s['write']:6.1f} {s['write_wait']:6.1f} "
        f"{100 * s['write_wait'] / wall:5.1f}% {r['chunk_only']:6.1f} {wall / r['chunk_only']:5.2f}x "
        f"{gb(r['rss_gb'])} {gb(r['fork_gb'])}  {gb(r['server_gb'])} {r['groups']:6d} "
        f"{r['failed']:6d}"
    )


# --- the child: one run ------------------------------------------------------------------------------
def _child(job: dict) -> None:
    """Ingest ``job['corpus']`` with ``Settings(**job['settings'])`` (an empty knowledge base), then embed the
    chunk texts of ``job['texts']`` alone; print ``RESULT {json}``."""
    from kbgraph.embed import get_embedder
    from kbgraph.kb import KnowledgeBase
    from kbgraph.settings import Settings

    settings = Settings(**job["settings"])
    _watch_workers()
    with KnowledgeBase(settings=settings) as kb:
        t0 = time.perf_counter()
        report = kb.ingest([Path(job["corpus"])], progress=False)
        wall = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / GB
        fork = max((float(x) for x in Path(os.environ[_WORKERS]).read_text().split()), default=0.0) / GB
        nodes = dict(kb.stats().nodes)
        groups = kb.store.sent["ingest/mark_documents_complete"]  # units of work written: one per group
    texts = json.loads(Path(job["texts"]).read_text(encoding="utf-8"))
    embedder = get_embedder(settings)  # the run's embedder, without the embedding cache around it
    t0 = time.perf_counter()
    embedder.embed(texts)
    chunk_only = time.perf_counter() - t0
    print(
        "RESULT "
        + json.dumps(
            {
                "wall": wall,
                "groups": groups,
                "seconds": {"write_wait": 0.0, **report.seconds},
                "failed": report.failed,
                "nodes": nodes,
                "rss_gb": rss,
                "fork_gb": fork or None,
                "chunk_only": chunk_only,
                "chunk_texts": len(texts),
            }
        ),
        flush=True,
    )


_WORKERS = "KBGRAPH_BENCH_WORKER_RSS"  # env: the file each forked distill worker appends its ru_maxrss (KiB) to


def _watch_workers() -> None:
    """Make every forked distill worker (``kbgraph.ingest.distill.pool``) record its own peak RSS (ru_maxrss,
    pages shared with the parent by fork included) in the file named by ``$KBGRAPH_BENCH_WORKER_RSS``."""
    from kbgraph.ingest.distill import pool

    fd, path = tempfile.mkstemp(prefix="worker-rss-")
    os.close(fd)
    os.environ[_WORKERS] = path
    _REAL_BLOCK.append(pool._worker_block)
    pool._worker_block = _recording_worker_block  # a module-level function: the pool pickles it by name


_REAL_BLOCK: list = []


def _recording_worker_block(bounds):
    part = _REAL_BLOCK[0](bounds)
    with open(os.environ[_WORKERS], "a", encoding="ascii") as f:
        f.write(f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\n")
    return part


def _run_probe() -> str:
    out = subprocess.run([*rerun(__file__), "--rss-probe"], capture_output=True, text=True, cwd=REPO)
    return out.stdout.strip().splitlines()[-1] if out.returncode == 0 and out.stdout.strip() else out.stderr[-300:]


def _rss_probe() -> None:
    """Print the RSS of this process with kbgraph's ingestion imported, then with the embedder, then with the
    spaCy pipeline loaded (what every ingesting process holds before it reads a document)."""
    import importlib

    from kbgraph.embed import get_embedder
    from kbgraph.ingest.nlp import load_nlp
    from kbgraph.settings import Settings

    importlib.import_module("kbgraph.ingest.pipeline")
    base = _vm("self", "VmRSS") or 0.0
    with tempfile.TemporaryDirectory() as tmp:
        exported = Path.home() / ".kbgraph" / "models"
        if exported.is_dir():
            (Path(tmp) / "models").symlink_to(exported, target_is_directory=True)
        get_embedder(Settings(home=Path(tmp))).embed(["warm up"])
        embed = _vm("self", "VmRSS") or 0.0
        load_nlp()("Warm up the pipeline.")
        nlp = _vm("self", "VmRSS") or 0.0
    print(f"imports {base:.2f} GB, + embedder {embed - base:.2f} GB, + spaCy {nlp - embed:.2f} GB = {nlp:.2f} GB")


if __name__ == "__main__":
    main()
