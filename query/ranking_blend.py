"""The blend ranker (setting ``ranker=blend``): the learned ranker's and the gbm ranker's scores of the same pool,
summed after each is standardised over the pool.

Both rankers re-order the learned pool (kbgraph.query.propagation ``learned_pool``): the linear model over the
score terms (kbgraph.query.ranking) is best at R@5 on MuSiQue, the gradient-boosted trees over terms and list
features (kbgraph.query.ranking_gbm) at R@1 and R@2 everywhere. A candidate's blend score is
``z(learned) + ranker_blend_weight * z(gbm)``, ``z`` the score minus the pool's mean over the pool's standard
deviation, so neither model's scale decides. Leave-one-set-out on the repo's three sets (docs/benchmarks.md,
"The blend ranker"; ``benchmarks/ranker_blend.py``) every R@1/R@2/R@5/R@10 of the blend is at or above the linear
ranker's. Both models are the shipped ones (``ranker_model`` is not read: it names one model).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kbgraph.query.models import RankerTerm
from kbgraph.query.ranking import feature_rows, load_model, score_rows
from kbgraph.query.ranking_gbm import gbm_rows, load_gbm_model
from kbgraph.settings import Settings
from kbgraph.store import GraphStore

if TYPE_CHECKING:
    from kbgraph.query.propagation import LearnedPool

__all__ = ["blend_order", "blend_scores", "standardised"]


def standardised(scores: np.ndarray) -> np.ndarray:
    """float64 (n,): ``scores`` minus their mean over their standard deviation; zeros when they are all equal."""
    s = np.asarray(scores, dtype=np.float64)
    sd = float(s.std()) if len(s) else 0.0
    return (s - s.mean()) / sd if sd > 1e-12 else np.zeros_like(s)


def blend_scores(learned: np.ndarray, gbm: np.ndarray, weight: float) -> np.ndarray:
    """float64 (n,): ``standardised(learned) + weight * standardised(gbm)``, the two rankers' scores of one pool."""
    return standardised(learned) + weight * standardised(gbm)


def blend_order(store: GraphStore, settings: Settings, question: str, pool: LearnedPool, k: int,
                explain: bool) -> tuple[list[str], dict[str, float], dict[str, list[RankerTerm]]]:  # fmt: skip
    """The blend ranker over ``pool``: (its top ``k`` chunk ids, {chunk id: blend score}, {chunk id: the two terms
    of its score, ``learned`` and ``gbm`` (value: the standardised score; contribution: its share of the blend
    score), when ``explain``}). At most one statement (the gbm ranker's pool texts). Raises ConfigError as
    ``load_model`` and ``load_gbm_model`` when a shipped model file is missing."""
    weight = settings.retrieval.ranker_blend_weight
    ids = pool.ids
    base = feature_rows(question, pool.candidates)  # the linear features, the first columns of the gbm's rows
    raw_learned = score_rows(load_model(None), base)
    raw_gbm = load_gbm_model(None).score(gbm_rows(store, question, pool, base))
    scores = blend_scores(raw_learned, raw_gbm, weight)
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))[:k]
    ranking = {}
    if explain:
        learned, gbm = standardised(raw_learned), standardised(raw_gbm)  # the two terms of each score
        ranking = {ids[i]: [RankerTerm(feature="learned", value=float(learned[i]), contribution=float(learned[i])),
                            RankerTerm(feature="gbm", value=float(gbm[i]), contribution=float(weight * gbm[i]))]
                   for i in order}  # fmt: skip
    return [ids[i] for i in order], {ids[i]: float(scores[i]) for i in order}, ranking
