"""The blend ranker (setting ``ranker=blend``, kbgraph.query.propagation.ranking_blend) leave-one-set-out on the repo's sets:
for each held-out set, the linear ranker (the learned one's base features) is fitted on the other two sets' pools;
the gbm ranker (the shipped one's text features, LightGBM lambdarank) is fitted on the same pools cut to their
*head*, the linear ranker's best ``k`` candidates (k = 0: the whole pool), with the list features computed over
that head as at query time; the held-out head is ordered by ``z(linear) + w * z(gbm)`` (each score standardised
over the head), the rest of the pool after it in the linear order, for every head ``k`` of ``--heads`` and every
weight ``w`` of ``--weights``. The pair (k, w) is then chosen leave-one-set-out too: for each held-out set, the pair
with the best summed ``--choose`` figure on the two other sets (ties: the smaller k, then the smaller w), and the
held-out set's figures at that pair are reported.

    .venv/bin/python -m benchmarks.ranker_blend --pools /tmp/lean/head/pools [--heads 0,10,15,20,30]
        [--weights 0,0.25,0.5,1,2,4,100] [--choose r2+r5|r5] [--gbm-features text] [--held-store neo4j]
        [--gbm-kind lgbm:n_estimators=150|lgbm]

``--pools``: the cached pools of ``benchmarks/ranker_compare.py --home H --pools P`` (step 1; that script dumps
them from the knowledge bases of ``benchmarks/ranker_loso.py --home H``).
"""

from __future__ import annotations

import argparse
import pickle
from pathlib import Path

import numpy as np

from benchmarks.ranker_features import (
    EVERY,
    GraphData,
    QuestionPool,
    Ranker,
    fit_model,
    labels_of,
    make_ranker,
    recall_model,
)

from kbgraph.query.propagation.ranking_learned import FEATURES, Candidate
from kbgraph.query.propagation.ranking_blend import blend_scores, head_of
from kbgraph.query.propagation.ranking_lists import GBM_FEATURES, list_rows

KS = (1, 2, 5, 10)
KIND = "lgbm:n_estimators=150"  # ranker_features.fit_model's kind of the gbm (--gbm-kind)
BASE = [EVERY.index(f) for f in FEATURES]


def head_rows(p: QuestionPool, head: list[int], key: tuple[object, ...]) -> np.ndarray:
    """The gbm's feature rows of the head ``head`` of ``p`` (list features over the head only), cached."""
    if key not in p._cache:
        cands = [Candidate.model_validate(p.candidates[i]) for i in head]
        p._cache[key] = list_rows(p.question, cands, [p.texts[i] for i in head])
    return p._cache[key]


def fold(
    data: dict[str, tuple[GraphData, list[QuestionPool]]],
    held: str,
    lin: Ranker,
    k: int,
    keep: list[int],
    weights: list[float],
    scored: tuple[GraphData, list[QuestionPool]],
    kind: str = KIND,
) -> dict[float, dict[int, float]]:
    """{w: the recall of ``scored`` (the held-out set's pools)} for head ``k``: the gbm fitted on the heads (by
    ``lin``) of the other sets, a model of ``kind`` (ranker_features.fit_model)."""

    def head(p: QuestionPool, g: GraphData) -> list[int]:
        return head_of(lin(p, g), k)

    def rows(p: QuestionPool, g: GraphData) -> np.ndarray:
        return head_rows(p, head(p, g), ("head", held, k))[:, keep]

    x, y, w, groups = [], [], [], []
    for o in (o for o in data if o != held):
        g, ps = data[o]
        ps = [p for p in ps if p.ids]
        for p in ps:
            x.append(rows(p, g))
            y.append(labels_of(p, g)[head(p, g)])
            w.append(np.full(len(y[-1]), 1.0 / len(ps)))
            groups.append(len(y[-1]))
    wt = np.concatenate(w)
    gbm = fit_model(kind, np.vstack(x), np.concatenate(y), wt * len(wt) / wt.sum(), groups)

    def ranker(v: float) -> Ranker:
        def score(p: QuestionPool, g: GraphData) -> np.ndarray:
            s = lin(p, g)
            h = head(p, g)
            out = s - (s.max() - s.min() + 1.0) * 1e3  # the rest: after the head, in the linear order
            out[h] = blend_scores(s[h], gbm(rows(p, g)), v)
            return out

        return score

    graph, pools = scored
    return {v: recall_model(pools, graph, ranker(v), KS) for v in weights}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pools", required=True)
    ap.add_argument("--sets", default="2wiki,musique,hotpotqa")
    ap.add_argument("--heads", default="0,10,15,20,30")
    ap.add_argument("--weights", default="0,0.25,0.5,1,2,4,100")
    ap.add_argument("--choose", default="r2+r5", choices=["r2+r5", "r5"])
    ap.add_argument(
        "--gbm-features",
        default="text",
        help="the gbm's features: \"text\" (the shipped ranker's) "
        'or "text-<relation>..." without some (ranker_features.make_ranker; --heads 0 only)',
    )
    ap.add_argument(
        "--held-store",
        default="",
        choices=["", "neo4j"],
        help="score each held-out set on its pools "
        "from this store's knowledge base (<set>_neo4j.pkl of ranker_compare.py --store neo4j); the fits "
        "stay on --pools' own",
    )
    ap.add_argument(
        "--gbm-kind",
        default=KIND,
        help="the gbm's model (ranker_features.fit_model): the shipped "
        "blend.json's by default (kbgraph.eval.rank_train_blend.BLEND_PARAMS); 'lgbm' = the gbm ranker's 300 trees; "
        "'lgbm:n_estimators=100+num_leaves=7' changes LightGBM's parameters",
    )
    args = ap.parse_args()
    data: dict[str, tuple[GraphData, list[QuestionPool]]] = {}
    for name in args.sets.split(","):
        with open(Path(args.pools) / f"{name}.pkl", "rb") as f:
            data[name] = pickle.load(f)
    scored = dict(data)  # the pools each held-out set is scored on
    if args.held_store:
        for name in data:
            with open(Path(args.pools) / f"{name}_{args.held_store}.pkl", "rb") as f:
                scored[name] = pickle.load(f)
    heads = [int(k) for k in args.heads.split(",")]
    weights = [float(w) for w in args.weights.split(",")]
    keep = [
        GBM_FEATURES.index(f)
        for f in GBM_FEATURES
        if not any(f == d or f.startswith(d + "_") for d in args.gbm_features.split("-")[1:])
    ]
    table: dict[tuple[str, int, float], dict[int, float]] = {}
    for held in data:
        lin = make_ranker("linear", "base", data, [o for o in data if o != held])
        for k in heads:
            for v, got in fold(data, held, lin, k, keep, weights, scored[held], args.gbm_kind).items():
                table[(held, k, v)] = got
    print(
        "Leave-one-set-out passage recall (%) R@1 / R@2 / R@5 / R@10; k = the head the blend re-orders (0: the "
        "whole pool), w = the gbm's weight (0: the linear ranker)"
    )
    for k in heads:
        for v in weights:
            print(
                f"k {k:<3} w {v:<5g} "
                + " | ".join(f"{h} " + " / ".join(f"{table[(h, k, v)][r]:.1f}" for r in KS) for h in data)
            )
    chosen = []
    for held in data:
        others = [o for o in data if o != held]

        k, v = max(
            ((k, v) for k in heads for v in weights),
            key=lambda kv, others=others: (
                sum(table[(o, *kv)][5] + (table[(o, *kv)][2] if args.choose == "r2+r5" else 0.0) for o in others),
                -kv[0],
                -kv[1],
            ),
        )
        chosen.append(f"{held} (k {k}, w {v:g}) " + " / ".join(f"{table[(held, k, v)][r]:.1f}" for r in KS))
    print(f"(k, w) chosen on the other two sets' {args.choose}: " + " | ".join(chosen))


if __name__ == "__main__":
    main()
