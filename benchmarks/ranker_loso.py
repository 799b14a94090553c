"""The learned ranker on the repo's multi-hop sets: in-set and leave-one-set-out passage recall beside the
weighted sum, from the same candidate pools (the shipped model is the library's: ``kbgraph rank train --model
linear --shipped``, docs/scoring.md).

    .venv/bin/python -m benchmarks.ranker_loso [--sets 2wiki,musique,hotpotqa] [--pool 50] [--c 1.0] \
        [--home DIR] [--no-ingest] [--set KEY=VALUE ...] [--drop-features NAME,...]

The knowledge bases are benchmarks/retrieval_recall.py's (``<home>/<set>_falkordb``, default home
~/.kbgraph-bench), built on first use; with ``--no-ingest`` they are only read (they must exist: not even the
record of an ingestion run is written, so another engineer's knowledge bases can be measured as they are).
``--set vector_layers=...`` switches layers' vector seeds off at query time on knowledge bases built with all of
them, which retrieves what knowledge bases built without them do (tests/test_vector_layers.py).
``--drop-features`` fits the models without those features (a term can then shape the pool through the weighted
sum without a weight of its own in the ranker, e.g. ``--set weight_triple_hop=0.2 --drop-features TripleHop``).
The same fit runs as ``kbgraph rank train --dataset ...`` on any data set (kbgraph.eval.rank_train).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from kbgraph.eval.dataset import load_dataset
from kbgraph.eval.rank_train import collect_pools, leave_one_out
from kbgraph.kb import KnowledgeBase
from kbgraph.query.propagation.ranking_learned import FEATURES
from kbgraph.settings import Settings
from kbgraph.store.falkordb import FalkorDBStore

from benchmarks.common import DEFAULT_HOME, set_path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="2wiki,musique,hotpotqa")
    ap.add_argument("--pool", type=int, default=50)
    ap.add_argument("--c", type=float, default=1.0)
    ap.add_argument("--home", default=str(DEFAULT_HOME))
    ap.add_argument("--no-ingest", action="store_true", help="only read the knowledge bases (they must exist)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a setting for the pools")
    ap.add_argument(
        "--drop-features",
        default="",
        metavar="NAME,...",
        help="features the fitted models leave out (e.g. TripleHop: a term in the pools' weighted sum "
        "that the ranker does not weigh on its own)",
    )
    args = ap.parse_args()
    overrides = dict(kv.split("=", 1) for kv in args.set)
    dropped = [f for f in args.drop_features.split(",") if f]
    unknown = [f for f in dropped if f not in FEATURES]
    if unknown:
        raise SystemExit(f"--drop-features: unknown {', '.join(unknown)}; known: {', '.join(FEATURES)}")
    features = [f for f in FEATURES if f not in dropped]
    by_set = {}
    for name in args.sets.split(","):
        ds = load_dataset(set_path(name))
        settings = Settings(
            home=Path(args.home), name=f"{name}_falkordb", falkor_idle_timeout=600, llm_model=None, **overrides
        )
        if args.no_ingest and not FalkorDBStore.exists(settings):
            raise SystemExit(f"--no-ingest: no knowledge base at {settings.kb_dir}")
        t0 = time.perf_counter()
        with KnowledgeBase(settings=settings) as kb:
            if ds.corpus_path is not None and not args.no_ingest:
                kb.ingest([ds.corpus_path], progress=False)
            by_set[ds.name] = collect_pools(kb, ds, pool=args.pool)
        print(f"{ds.name}: {len(by_set[ds.name])} pools in {time.perf_counter() - t0:.0f} s", flush=True)
    table = leave_one_out(by_set, pool=args.pool, c=args.c, features=features)
    print(
        f"\nPassage recall (%), pool {args.pool}, C {args.c} {' '.join(args.set)} without {dropped or 'none'}: "
        "weights | learned in-set | "
        "learned leave-one-set-out"
    )
    print(f"{'set':34} {'ranker':14} {'R@1':>6} {'R@2':>6} {'R@5':>6} {'R@10':>6}")
    for name, row in table.items():
        for variant, r in row.items():
            print(f"{name:34} {variant:14} " + " ".join(f"{r[f'R@{k}']:6.1f}" for k in (1, 2, 5, 10)))


if __name__ == "__main__":
    main()
