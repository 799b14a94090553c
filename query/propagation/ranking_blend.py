"""The blend ranker (setting ``ranker=blend``): the learned ranker's order, its head re-ordered by the learned and
the gbm rankers' scores, summed after each is standardised over the head.

The learned (linear) ranker orders the learned pool (kbgraph.query.propagation.propagate ``learned_pool``) as it does alone;
its best ``ranker_blend_k`` candidates (the *head*; 0 = the whole pool) are then re-ordered by
``z(learned) + ranker_blend_weight * z(gbm)``, ``z`` the score minus the head's mean over the head's standard
deviation, so neither model's scale decides. The gbm (kbgraph.query.propagation.ranking_gbm: trees over the score terms and
the list features, which recognise the second passage of a chain) scores the head alone, its list features
computed over the head: the shipped model ``blend.json`` was fitted that way, on the heads of the shipped learned
ranker. The rest of the pool follows the head in the learned order. A two-stage ranker: the linear model is
cheap over the whole pool, the trees and list features run over 15 candidates rather than ~90.

Leave-one-set-out on the repo's three sets (docs/benchmarks.md#the-blend-ranker-over-the-learned-head;
``benchmarks/ranker_blend.py``) every R@1/R@2/R@5/R@10 of the blend is at or above the linear ranker's. Both models
are the shipped ones (``ranker_model`` is not read: it names one model).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kbgraph.errors import ConfigError
from kbgraph.query.models import RankerTerm
from kbgraph.query.propagation.ranking_learned import feature_rows, load_model, score_rows
from kbgraph.query.propagation.ranking_gbm import default_blend_path, gbm_rows, load_gbm_model
from kbgraph.settings import Settings
from kbgraph.store import GraphStore

if TYPE_CHECKING:
    from kbgraph.query.propagation.propagate import LearnedPool

__all__ = ["blend_order", "blend_scores", "head_of", "head_rows", "standardised"]


def standardised(scores: np.ndarray) -> np.ndarray:
    """float64 (n,): ``scores`` minus their mean over their standard deviation; zeros when they are all equal."""
    s = np.asarray(scores, dtype=np.float64)
    sd = float(s.std()) if len(s) else 0.0
    return (s - s.mean()) / sd if sd > 1e-12 else np.zeros_like(s)


def blend_scores(learned: np.ndarray, gbm: np.ndarray, weight: float) -> np.ndarray:
    """float64 (n,): ``standardised(learned) + weight * standardised(gbm)``, the two rankers' scores of one pool."""
    return standardised(learned) + weight * standardised(gbm)


def head_of(scores: np.ndarray, k: int) -> list[int]:
    """The positions of the best ``k`` of ``scores`` (ties: the earlier), in pool order; every position when ``k``
    is 0 or the pool has no more than ``k``: the blend's head, from the learned ranker's scores."""
    n = len(scores)
    return list(range(n)) if k <= 0 or k >= n else sorted(np.argsort(-scores, kind="stable")[:k].tolist())


def head_rows(
    store: GraphStore, question: str, pool: LearnedPool, size: int
) -> tuple[np.ndarray, list[int], np.ndarray]:
    """The blend's head of ``pool`` and what its gbm scores: (the shipped learned model's score of every candidate,
    float64 (n,); the head, the positions of its best ``size`` in pool order (:func:`head_of`); the gbm feature rows
    of the head, float64 (len(head), len(GBM_FEATURES)), their linear columns those of the whole pool). Query time
    (:func:`blend_order`) and training (kbgraph.eval.rank_train_blend) read the head through this one function. At
    most one statement (the head's texts not seen before). Raises ConfigError when the shipped learned model is
    missing."""
    base = feature_rows(question, pool.candidates)  # the linear features, the first columns of the gbm's rows
    raw_learned = score_rows(load_model(None), base)
    head = head_of(raw_learned, size)
    part = type(pool)(
        ids=[pool.ids[i] for i in head], candidates=[pool.candidates[i] for i in head], read_texts=pool.read_texts
    )
    return raw_learned, head, gbm_rows(store, question, part, base[head])


def blend_order(
    store: GraphStore, settings: Settings, question: str, pool: LearnedPool, k: int, explain: bool
) -> tuple[list[str], dict[str, float], dict[str, list[RankerTerm]]]:
    """The blend ranker over ``pool``: (its top ``k`` chunk ids, {chunk id: score}, {chunk id: the terms of its
    score, when ``explain``}). A head candidate's score is its blend score, terms ``learned`` and ``gbm`` (value:
    the standardised score; contribution: its share of the score); a candidate after the head scores its
    standardised learned score (term ``learned``, over the head's mean and deviation) moved below the head's last
    (term ``after_head``), so scores fall in the order given. At most one statement (the texts of head candidates
    not seen before, kbgraph.query.propagation.ranking_gbm ``pool_facts``). Raises ConfigError as ``load_model`` and
    ``load_gbm_model`` when a shipped model file is missing, and when ``ranker_model`` is set: it names one model,
    which the blend (two models, the shipped ones) would leave unread."""
    if settings.retrieval.ranker_model is not None:
        raise ConfigError(
            f"ranker_model {settings.retrieval.ranker_model} is read by ranker 'learned' or 'gbm', not by 'blend' (the "
            "default), which orders by its two shipped models: set ranker=learned (KBGRAPH_RANKER=learned) for a "
            "model of `kbgraph rank train`, or ranker=gbm for one of `--model gbm`"
        )
    weight, size = settings.retrieval.ranker_blend_weight, settings.retrieval.ranker_blend_k
    ids = pool.ids
    raw_learned, head, rows = head_rows(store, question, pool, size)
    n = len(ids)
    raw_gbm = load_gbm_model(default_blend_path()).score(rows)
    learned, gbm = standardised(raw_learned[head]), standardised(raw_gbm)
    scores = np.empty(n)
    scores[head] = learned + weight * gbm
    in_head = np.zeros(n, dtype=bool)
    in_head[head] = True
    rest = np.flatnonzero(~in_head)
    z_rest = np.zeros(0)
    shift = 0.0
    if len(rest):  # the learned ranker's scores, on the head's scale, below the head's last
        mean, sd = float(raw_learned[head].mean()), float(raw_learned[head].std())
        z_rest = (raw_learned[rest] - mean) / (sd if sd > 1e-12 else 1.0)
        shift = min(float(scores[head].min()) - float(z_rest.max()) - 1.0, 0.0)
        scores[rest] = z_rest + shift
    order = sorted(range(n), key=lambda i: (not in_head[i], -scores[i], ids[i]))[:k]
    ranking = {}
    if explain:
        at = {i: j for j, i in enumerate(head)}
        after = {i: j for j, i in enumerate(rest.tolist())}
        for i in order:
            if i in at:
                j = at[i]
                ranking[ids[i]] = [
                    RankerTerm(feature="learned", value=float(learned[j]), contribution=float(learned[j])),
                    RankerTerm(feature="gbm", value=float(gbm[j]), contribution=float(weight * gbm[j])),
                ]
            else:
                z = float(z_rest[after[i]])
                ranking[ids[i]] = [
                    RankerTerm(feature="learned", value=z, contribution=z),
                    RankerTerm(feature="after_head", value=1.0, contribution=shift),
                ]
    return [ids[i] for i in order], {ids[i]: float(scores[i]) for i in order}, ranking
