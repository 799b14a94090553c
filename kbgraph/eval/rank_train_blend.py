"""Fitting the blend ranker's gbm (kbgraph.query.propagation.ranking_blend) on labelled questions: ``kbgraph rank train --model
blend``.

The blend ranker re-orders the *head* of the learned pool, the shipped learned ranker's best ``ranker_blend_k``
candidates, with a gbm model of its own (``kbgraph/resources/ranker/blend.json``). That model is fitted here on the
heads alone: for each question, the learned ranker's query-time pool (kbgraph.eval.rank_train ``collect_pools``),
cut to the best :data:`BLEND_HEAD` by the shipped learned model, each candidate labelled 1 when its passage is
gold, with the feature rows the blend's gbm scores at query time: both read the head through one function,
kbgraph.query.propagation.ranking_blend ``head_rows`` (the list features over the head, the linear columns over the whole
pool). The fit is the
gbm ranker's (kbgraph.eval.rank_train_gbm ``fit_gbm``, LightGBM lambdarank, each data set weighing the same) with
:data:`BLEND_PARAMS` over its :data:`~kbgraph.eval.rank_train_gbm.PARAMS`.

Parameters: half the gbm ranker's trees (150), the same recall held out at half the scoring cost
(benchmarks/HISTORY.md, "The blend ranker over the learned head"); a head of 15, ``ranker_blend_k``'s default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kbgraph.eval.dataset import Dataset
from kbgraph.eval.rank_train import LabelledPool, collect_pools
from kbgraph.eval.rank_train_gbm import fit_gbm
from kbgraph.query.propagation.ranking_blend import head_rows
from kbgraph.query.propagation.ranking_gbm import GBMModel

if TYPE_CHECKING:
    from kbgraph.eval.target import EvalTarget
    from kbgraph.query.propagation.propagate import LearnedPool

#: The blend's gbm: LightGBM's parameters over kbgraph.eval.rank_train_gbm.PARAMS (half the trees).
BLEND_PARAMS: dict[str, Any] = {"n_estimators": 150}
#: The head the blend's gbm is fitted on: the shipped learned ranker's best 15 of each pool (``ranker_blend_k``).
BLEND_HEAD = 15


def collect_blend_pools(
    kb: EvalTarget,
    ds: Dataset,
    *,
    pool: int,
    size: int = BLEND_HEAD,
    limit: int | None = None,
    log: Callable[[str], None] | None = None,
) -> list[LabelledPool]:
    """The labelled heads of ``ds``'s questions on ``kb``: ``collect_pools`` (``ranker_pool`` = ``pool``) cut to the
    best ``size`` of each pool by the shipped learned model (all of a pool of ``size`` or fewer), in pool order,
    with the rows the blend's gbm scores at query time (kbgraph.query.propagation.ranking_blend ``head_rows``; one statement
    per question: the head's texts).

    Returns:
        One :class:`~kbgraph.eval.rank_train.LabelledPool` per question with gold passages: rows float64
        (<= size, len(GBM_FEATURES)), labels, passages and gold as ``collect_pools`` gives them.

    Raises:
        ConfigError: the shipped learned model is missing (kbgraph.query.propagation.ranking_learned ``load_model``).
    """

    def head(question: str, found: LearnedPool) -> tuple[list[int], np.ndarray]:
        _, kept, rows = head_rows(kb.store, question, found, size)
        return kept, rows

    return collect_pools(kb, ds, pool=pool, limit=limit, log=log, select=head)


def fit_blend(
    by_set: Mapping[str, Sequence[LabelledPool]], *, head: int = BLEND_HEAD, params: Mapping[str, Any] | None = None
) -> GBMModel:
    """The blend ranker's :class:`~kbgraph.query.propagation.ranking_gbm.GBMModel` fitted on the heads of ``by_set`` ({data set
    name: :func:`collect_blend_pools`' pools}): ``fit_gbm`` with :data:`BLEND_PARAMS` updated by ``params``; its
    ``pool`` is ``head``.

    Raises:
        ConfigError: without LightGBM, or without both labels in the heads.
    """
    return fit_gbm(by_set, pool=head, params={**BLEND_PARAMS, **(params or {})})
