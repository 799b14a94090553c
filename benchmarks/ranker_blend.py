"""The blend ranker (setting ``ranker=blend``, kbgraph.query.ranking_blend) leave-one-set-out on the repo's sets:
for each held-out set, the linear ranker (the learned one's base features) and the gbm ranker (the shipped one's
text features, LightGBM lambdarank) are fitted on the other two sets' pools, and the held-out pools are ordered by
``z(linear) + w * z(gbm)`` (each score standardised over its pool) for every weight ``w`` of ``--weights``. The
weight itself is then chosen leave-one-set-out too: for each held-out set, the weight with the best summed R@5
on the two other sets (ties: the smaller weight), and the held-out set's figures at that weight are reported.

    .venv/bin/python benchmarks/ranker_blend.py --pools /tmp/lean/head/pools [--weights 0,0.25,0.5,1,100] [--gbm-features text]

``--pools``: the cached pools of ``benchmarks/ranker_compare.py --home H --pools P`` (step 1; that script dumps
them from the knowledge bases of ``benchmarks/ranker_loso.py --home H``).
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ranker_features import make_ranker, recall_model  # noqa: E402

from kbgraph.query.ranking_blend import blend_scores  # noqa: E402

KS = (1, 2, 5, 10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pools", required=True)
    ap.add_argument("--sets", default="2wiki,musique,hotpotqa")
    ap.add_argument("--weights", default="0,0.25,0.5,1,100")
    ap.add_argument("--gbm-features", default="text", help='the gbm\'s features: "text" (the shipped ranker\'s) '
                    'or "text-<relation>..." without some (ranker_features.make_ranker)')
    args = ap.parse_args()
    data = {}
    for name in args.sets.split(","):
        with open(Path(args.pools) / f"{name}.pkl", "rb") as f:
            data[name] = pickle.load(f)
    weights = [float(w) for w in args.weights.split(",")]
    table: dict[tuple[str, float], dict[int, float]] = {}
    for held, (graph, pools) in data.items():
        others = [o for o in data if o != held]
        lin, gbm = make_ranker("linear", "base", data, others), make_ranker("lgbm", args.gbm_features, data, others)
        for w in weights:
            table[(held, w)] = recall_model(pools, graph, lambda p, g, w=w, a=lin, b=gbm: blend_scores(a(p, g), b(p, g), w), KS)
    print("Leave-one-set-out passage recall (%) R@1 / R@2 / R@5 / R@10; w = the gbm's weight (0: the linear ranker)")
    for w in weights:
        print(f"w {w:<6g} " + " | ".join(f"{held} " + " / ".join(f"{table[(held, w)][k]:.1f}" for k in KS)
                                       for held in data))  # fmt: skip
    chosen = []
    for held in data:
        others = [o for o in data if o != held]
        w = max(weights, key=lambda v: (sum(table[(o, v)][5] for o in others), -v))
        chosen.append(f"{held} (w {w:g}) " + " / ".join(f"{table[(held, w)][k]:.1f}" for k in KS))
    print("w chosen on the other two sets: " + " | ".join(chosen))


if __name__ == "__main__":
    main()
