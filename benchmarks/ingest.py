"""Ingestion throughput, offline (no LLM): a multi-hop passage corpus into a fresh knowledge base.
Prints passages/s, seconds per stage (parse, chunk, distill, embed, write), the share of graph writes and
peak RSS, per store. Targets (2 cores): 3,301 passages <= 180 s end to end, writes <= 15 %, RSS <= 3 GB.

    .venv/bin/python benchmarks/ingest.py [--corpus 2wiki|musique|hotpotqa|docs] [--stores falkordb,neo4j]
        [--limit N] [--no-cache]

Each store starts with its own empty embedding cache: a cold first ingest as a user gets it (a text that
recurs in the run, e.g. an entity name in many passages, is embedded once). --no-cache embeds every text
every time it occurs. The Neo4j server is a scratch one (~/.kbgraph-bench/neo4j-ingest, bolt 17690).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from pydantic import SecretStr

from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
MULTIHOP = EXAMPLES / "multihop"
#: "docs" = the sample documents folder (examples/docs: PDFs, DOCX, HTML), the README's quick start
CORPORA = {
    "docs": "docs",
    "2wiki": "2wikimultihopqa/dev500.corpus.jsonl",
    "musique": "musique/hipporag_train100.corpus.jsonl",
    "hotpotqa": "hotpotqa/hipporag_train100.corpus.jsonl",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="2wiki", choices=sorted(CORPORA))
    ap.add_argument("--stores", default="falkordb,neo4j")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--no-cache", dest="cache", action="store_false", help="no embedding cache")
    args = ap.parse_args()
    src = EXAMPLES / CORPORA[args.corpus] if args.corpus == "docs" else MULTIHOP / CORPORA[args.corpus]
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
        rows = []
        exported = Path.home() / ".kbgraph" / "models"  # the ONNX export is made once per machine, not per run
        if exported.is_dir():
            (Path(tmp) / "models").symlink_to(exported, target_is_directory=True)
        for store in args.stores.split(","):
            settings = Settings(home=Path(tmp), name=f"bench_{store}", falkor_idle_timeout=0,
                                embedding_cache=args.cache, embedding_cache_dir=Path(tmp) / f"cache_{store}")  # fmt: skip
            local = None
            if store == "neo4j":
                from kbgraph.neo4j_local import Neo4jLocal

                settings = settings.model_copy(update={
                    "neo4j_local_home": Path.home() / ".kbgraph-bench" / "neo4j-ingest", "neo4j_bolt_port": 17690,
                    "neo4j_http_port": 17477, "neo4j_password": SecretStr("kbgraph-bench")})  # fmt: skip
                local = Neo4jLocal(settings, lib_dir=Path.home() / ".kbgraph" / "neo4j-local" / "lib")
                settings = settings.model_copy(update={"uri": local.start(timeout=180).bolt_uri})
            try:
                with KnowledgeBase(settings=settings) as kb:
                    kb.reset()
                    t0 = time.perf_counter()
                    report = kb.ingest([corpus], progress=False)
                    wall = time.perf_counter() - t0
                    stats = kb.stats()
                    kb.reset()
                rows.append((store, len(lines), wall, report, stats))
                _print_row(*rows[-1])
            finally:
                if local is not None:
                    local.stop()
                else:
                    from kbgraph.store.falkor_server import EmbeddedFalkorDB

                    EmbeddedFalkorDB(settings.kb_dir).stop()
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 / 1024
    unit = "files" if src.is_dir() else "passages"
    print(f"\ncorpus {args.corpus}: {len(lines):,} {unit}, embedding cache {'on' if args.cache else 'off'}")
    print(HEADER)
    for row in rows:
        _print_row(*row, header=False)
    print(f"peak RSS of this process: {peak_gb:.2f} GB (target <= 3 GB); target <= 180 s for 3,301 passages")
    if len(rows) == 2:
        print(f"Neo4j/FalkorDB wall-time ratio: {rows[1][2] / rows[0][2]:.2f}x")


HEADER = (f"{'store':9} {'seconds':>8} {'items/s':>7} {'parse':>6} {'chunk':>6} {'distill':>8} {'embed':>7} "
          f"{'write':>7} {'write%':>7} {'failed':>6}")  # fmt: skip


def _print_row(store, n, wall, report, stats, header: bool = True) -> None:
    s = report.seconds
    if header:
        print(HEADER)
    print(f"{store:9} {wall:8.1f} {n / wall:7.1f} {s['parse']:6.1f} {s['chunk']:6.1f} {s['distill']:8.1f} "
          f"{s['embed']:7.1f} {s['write']:7.1f} {100 * s['write'] / wall:6.1f}% {report.failed:6d}", flush=True)  # fmt: skip
    print(f"          nodes {dict(stats.nodes)}", flush=True)


if __name__ == "__main__":
    main()
