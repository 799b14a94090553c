"""Fitting the gbm ranker (kbgraph.query.propagation.ranking_gbm) on labelled questions: ``kbgraph rank train --model gbm``.

The pools are the learned ranker's (kbgraph.eval.rank_train ``collect_pools``: the query-time pool of each
question, a chunk labelled 1 when its passage is gold) with the gbm ranker's feature rows
(kbgraph.query.propagation.ranking_lists ``list_rows``, the pool's texts read as at query time). LightGBM's lambdarank (the
``eval`` extra) fits one group per question, each data set weighing the same whatever its number of questions;
the booster's trees are written as a :class:`~kbgraph.query.propagation.ranking_gbm.GBMModel` (JSON), which scores without
LightGBM.

Parameters (:data:`PARAMS`): 300 trees of at most 15 leaves, learning rate 0.05, at least 50 rows per leaf, rows
and features subsampled at 0.8 (seeded: the same pools give the same model), L2 1.0, lambdarank truncated at
20. They were not tuned on the held-out figures: four other settings gave recall within about 1.5 points
(benchmarks/HISTORY.md, "Learned rankers compared").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kbgraph.errors import ConfigError
from kbgraph.eval.dataset import Dataset
from kbgraph.eval.rank_train import LabelledPool, collect_pools, loso_table
from kbgraph.query.propagation.ranking_gbm import GBMModel, Tree, gbm_rows
from kbgraph.query.propagation.ranking_lists import GBM_FEATURES

if TYPE_CHECKING:
    from kbgraph.eval.target import EvalTarget

#: LightGBM's parameters (LGBMRanker keywords).
PARAMS: dict[str, Any] = {
    "objective": "lambdarank",
    "n_estimators": 300,
    "learning_rate": 0.05,
    "num_leaves": 15,
    "min_child_samples": 50,
    "subsample": 0.8,
    "subsample_freq": 1,
    "colsample_bytree": 0.8,
    "reg_lambda": 1.0,
    "lambdarank_truncation_level": 20,
    "random_state": 0,
    "n_jobs": 1,
    "verbose": -1,
}


def collect_gbm_pools(
    kb: EvalTarget, ds: Dataset, *, pool: int, limit: int | None = None, log: Callable[[str], None] | None = None
) -> list[LabelledPool]:
    """``collect_pools`` of ``ds`` on ``kb`` with the gbm ranker's feature rows (one more statement per
    question: the pool's texts)."""
    return collect_pools(
        kb, ds, pool=pool, limit=limit, log=log, rows=lambda question, found: gbm_rows(kb.store, question, found)
    )


def fit_gbm(
    by_set: Mapping[str, Sequence[LabelledPool]], *, pool: int, params: Mapping[str, Any] | None = None
) -> GBMModel:
    """A :class:`GBMModel` fitted on the pools of every data set of ``by_set`` ({name: pools with gbm rows}),
    LightGBM lambdarank with :data:`PARAMS` updated by ``params``. Each data set weighs the same. Raises
    ConfigError without LightGBM or without both labels."""
    try:
        import lightgbm
    except ImportError:
        raise ConfigError("fitting the gbm ranker needs LightGBM: pip install 'kbgraph[eval]'") from None
    xs, ys, ws, groups = [], [], [], []
    for pools in by_set.values():
        kept = [p for p in pools if len(p.rows)]
        for p in kept:
            xs.append(p.rows)
            ys.append(p.labels)
            ws.append(np.full(len(p.labels), 1.0 / len(kept)))
            groups.append(len(p.labels))
    if not xs or len(set(np.concatenate(ys).tolist())) < 2:
        raise ConfigError(
            "the training pools need both gold and non-gold chunks: are the data sets' corpora "
            "ingested, and do their gold_passage_ids name corpus passages?"
        )
    w = np.concatenate(ws)
    ranker = lightgbm.LGBMRanker(**{**PARAMS, **(params or {})})
    ranker.fit(np.vstack(xs), np.concatenate(ys), sample_weight=w * len(w) / w.sum(), group=groups)
    return from_lightgbm(ranker.booster_.dump_model(), pool=pool, trained_on=list(by_set))


def from_lightgbm(dump: Mapping[str, Any], *, pool: int, trained_on: Sequence[str] = ()) -> GBMModel:
    """The :class:`GBMModel` of a LightGBM booster's ``dump_model()`` fitted on rows of
    :data:`GBM_FEATURES` (numerical splits "<=" only)."""
    trees = [_tree(info["tree_structure"]) for info in dump["tree_info"]]
    return GBMModel(features=list(GBM_FEATURES), trees=trees, pool=pool, trained_on=list(trained_on))


def _tree(root: Mapping[str, Any]) -> Tree:
    """A LightGBM tree (``tree_structure`` of ``dump_model()``) as node arrays, preorder."""
    nodes: list[tuple[int, float, int, int, float]] = []  # feature, threshold, left, right, value

    def add(node: Mapping[str, Any]) -> int:
        i = len(nodes)
        if "leaf_value" in node:
            nodes.append((-1, 0.0, -1, -1, float(node["leaf_value"])))
            return i
        if node.get("decision_type", "<=") != "<=":
            raise ValueError(f"unsupported split {node.get('decision_type')!r} (numerical '<=' only)")
        nodes.append((int(node["split_feature"]), float(node["threshold"]), -1, -1, float(node["internal_value"])))
        left = add(node["left_child"])
        right = add(node["right_child"])
        nodes[i] = (nodes[i][0], nodes[i][1], left, right, nodes[i][4])
        return i

    add(root)
    return Tree(
        feature=[n[0] for n in nodes],
        threshold=[n[1] for n in nodes],
        left=[n[2] for n in nodes],
        right=[n[3] for n in nodes],
        value=[n[4] for n in nodes],
    )


def leave_one_out_gbm(
    by_set: dict[str, list[LabelledPool]], *, pool: int, params: Mapping[str, Any] | None = None
) -> dict[str, dict[str, dict[str, float]]]:
    """As kbgraph.eval.rank_train ``leave_one_out``, for the gbm ranker: per data set, recall with the weighted
    sum ("weights"), the model fitted on every set ("in_set") and the model fitted on the others
    ("leave_one_out"; absent with one set)."""
    return loso_table(by_set, lambda sets: fit_gbm(sets, pool=pool, params=params))
