"""Per-question latency of method ``propagation`` (learned ranker, the shipped model) with some layers' vector
seeds off (setting ``vector_layers``), on a knowledge base built with every layer embedded (issue 38).

    .venv/bin/python -m benchmarks.layer_latency --home DIR [--corpus 2wiki] [--questions 200] \
        [--configs "all;AtomicQuestion,Triple,Section,Document;..."]

Each question is embedded once; then, for every configuration in turn (the order rotated per question, so load
drift on a shared machine falls on all alike), its seeding and propagation are timed twice:

* ``as is``: today's code: ``retrieve/seed_vectors`` searches every vector index in one statement and the layers
  that are off are dropped afterwards (what a knowledge base built with every layer pays under the setting);
* ``lean``: the same with the off layers' branches left out of that statement, i.e. what a knowledge base built
  without those vectors would cost if the statement skipped their (empty) indexes.

Milliseconds exclude the question embedding (as benchmarks/query.py). The script only reads the knowledge base
(no ingestion: it must exist, e.g. built by benchmarks/retrieval_recall.py). ``all`` = every layer on.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from kbgraph import cypher
from kbgraph.eval.dataset import load_dataset
from kbgraph.kb import KnowledgeBase
from kbgraph.query.propagation.propagate import propagate
from kbgraph.query.propagation.seeding import seed_layers
from kbgraph.settings import Settings
from kbgraph.settings_groups import VECTOR_LAYER_CHOICES
from kbgraph.models import VECTOR_LABELS, VectorHit
from kbgraph.store.falkordb import FalkorDBStore

from benchmarks.common import SETS, set_path

DEFAULT_CONFIGS = (
    "all;AtomicQuestion,Triple,Section,Document;AtomicQuestion,Triple,Section;"
    "AtomicQuestion,Entity,Section,Document;AtomicQuestion,Section,Document;AtomicQuestion;"
)


def reduced_statement(store: FalkorDBStore, on: set[str]) -> str:
    """``retrieve/seed_vectors`` with only the UNION ALL branches of Chunk and the layers of ``on``."""
    text = "\n".join(
        line
        for line in cypher.load("retrieve/seed_vectors", store.dialect).splitlines()
        if not line.lstrip().startswith("//")
    )
    branches = [b.strip() for b in text.split("UNION ALL")]
    keep = [b for b in branches if any(f"'{label}'" in b.split("\n", 1)[0] for label in on | {"Chunk"})]
    return "\nUNION ALL\n".join(keep)


def lean_seed_vectors(store: FalkorDBStore, statement: str):
    """A ``seed_vectors`` for ``store`` that runs ``statement`` (as GraphStore.seed_vectors otherwise)."""

    def seed_vectors(embedding, k, layer_embeddings=None):
        out = {label: [] for label in VECTOR_LABELS}
        for r in store._execute(statement, store.seed_params(embedding, k, layer_embeddings)):
            out[r["layer"]].append(
                VectorHit(
                    id=r["id"],
                    label=r["layer"],
                    score=store._vector_similarity(r["score"]),
                    properties={"text": r["text"]},
                )
            )
        for hits in out.values():
            hits.sort(key=lambda h: h.score, reverse=True)
        return out

    return seed_vectors


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", required=True)
    ap.add_argument("--corpus", default="2wiki", choices=sorted(SETS))
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--configs", default=DEFAULT_CONFIGS, help="';'-separated vector_layers values; 'all' = default")
    args = ap.parse_args()
    configs = [c.strip() for c in args.configs.split(";")]
    ds = load_dataset(set_path(args.corpus))
    base = Settings(home=Path(args.home), name=f"{args.corpus}_falkordb", falkor_idle_timeout=600, llm_model=None)
    if not FalkorDBStore.exists(base):
        raise SystemExit(f"no knowledge base at {base.kb_dir}: build it first (this script does not ingest)")
    questions = [q.question for q in ds.questions][: args.warmup + args.questions]
    times: dict[tuple[str, str], list[float]] = {(c, m): [] for c in configs for m in ("as is", "lean")}
    differ = dict.fromkeys(configs, 0)
    with KnowledgeBase(settings=base) as kb:
        store = kb.store
        full = store.seed_vectors
        per = {}
        for c in configs:
            s = base if c == "all" else base.updated({"vector_layers": c})
            on = set(VECTOR_LAYER_CHOICES) - set(s.embedding.vector_layers_off)
            per[c] = (s, lean_seed_vectors(store, reduced_statement(store, on)))
        for i, q in enumerate(questions):
            qvec = kb.embedder.embed([q])[0].tolist()
            order = configs[i % len(configs) :] + configs[: i % len(configs)]
            for c in order:
                s, lean = per[c]
                got = {}
                for mode in ("as is", "lean"):
                    store.seed_vectors = full if mode == "as is" else lean
                    t0 = time.perf_counter()
                    top = propagate(store, s, seed_layers(store, s, q, qvec), k=10)
                    ms = (time.perf_counter() - t0) * 1000
                    got[mode] = [x.id for x in top]
                    if i >= args.warmup:
                        times[(c, mode)].append(ms)
                store.seed_vectors = full
                differ[c] += got["as is"] != got["lean"]
    print(
        f"\n{args.corpus}: {args.questions} questions after {args.warmup} warm-up; ms of seeding + propagation "
        "(learned ranker), question embedding excluded"
    )
    print(f"{'vector_layers':45} {'as is p50':>9} {'p95':>7} {'lean p50':>9} {'p95':>7}  top-10 differ")
    for c in configs:
        a, b = times[(c, "as is")], times[(c, "lean")]
        print(
            f"{c or '(none: Chunk only)':45} {statistics.median(a):9.1f} {pct(a, 0.95):7.1f} "
            f"{statistics.median(b):9.1f} {pct(b, 0.95):7.1f}  {differ[c]}"
        )


if __name__ == "__main__":
    main()
