"""kbgraph.query.ranking_blend's arithmetic: standardised scores and their weighted sum."""

from __future__ import annotations

import numpy as np

from kbgraph.query.ranking_blend import blend_scores, standardised


def test_standardised_has_mean_0_and_deviation_1_and_keeps_the_order() -> None:
    s = standardised(np.array([3.0, 1.0, 2.0, 10.0]))
    assert abs(s.mean()) < 1e-12 and abs(s.std() - 1.0) < 1e-12
    assert list(np.argsort(-s)) == [3, 0, 2, 1]


def test_equal_scores_and_an_empty_pool_standardise_to_zeros() -> None:
    assert standardised(np.array([0.4, 0.4, 0.4])).tolist() == [0.0, 0.0, 0.0]
    assert standardised(np.array([])).tolist() == []


def test_the_blend_is_the_weighted_sum_of_the_standardised_scores() -> None:
    learned, gbm = np.array([2.0, 0.0, 1.0]), np.array([-5.0, 5.0, 0.0])
    want = (learned - 1.0) / np.sqrt(2 / 3) + 0.5 * gbm / np.sqrt(50 / 3)
    assert np.allclose(blend_scores(learned, gbm, 0.5), want)
    assert list(np.argsort(-blend_scores(learned, gbm, 0.0))) == [0, 2, 1]  # weight 0: the learned order
    assert list(np.argsort(-blend_scores(learned, gbm, 100.0))) == [1, 2, 0]  # the gbm's, at a large weight
