"""Labelled pools with a planted signal, for the rankers' fitting tests (tests/test_ranking.py,
tests/test_ranking_gbm.py): each question a pool of 20 candidates with random features in [0, 1), two of them
gold and standing out by +1 on one feature."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kbgraph.eval.rank_train import LabelledPool


def planted_pools(rng: np.random.Generator, n: int, features: Sequence[str], gold_feature: str) -> list[LabelledPool]:
    """``n`` pools over ``features`` whose gold chunks stand out on ``gold_feature`` (draws from ``rng``)."""
    out = []
    for q in range(n):
        rows = rng.random((20, len(features)))
        labels = np.zeros(20, dtype=int)
        gold = rng.choice(20, size=2, replace=False)
        labels[gold] = 1
        rows[gold, list(features).index(gold_feature)] += 1.0  # the gold chunks stand out on one feature
        out.append(
            LabelledPool(
                rows=rows, labels=labels, passages=[f"{q}:{i}" for i in range(20)], gold=[f"{q}:{i}" for i in gold]
            )
        )
    return out
