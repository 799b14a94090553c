"""kbgraph.query.propagation.ranking_blend's arithmetic: standardised scores and their weighted sum; on a planted pool, no
store, its order over the learned ranker's head equals an independent recomputation (the head's own list
features, the shipped blend model's trees walked node by node)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kbgraph.errors import ConfigError
from kbgraph.query.propagation.propagate import LearnedPool
from kbgraph.query.propagation.ranking_learned import feature_rows, load_model, score_rows
from kbgraph.query.propagation.ranking_blend import blend_order, blend_scores, standardised
from kbgraph.query.propagation.ranking_gbm import default_blend_path
from kbgraph.query.propagation.ranking_lists import GBM_FEATURES, list_rows
from kbgraph.settings import Settings
from tests.unit.test_ranking_gbm import QUESTION, _walk, pool


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


@pytest.mark.parametrize("head_k", [0, 2, 3])
def test_the_head_is_reordered_by_its_own_list_features(head_k: int) -> None:
    cands, texts = pool()
    ids = [f"c{i}" for i in range(len(cands))]
    learned = score_rows(load_model(None), feature_rows(QUESTION, cands))
    top = set(np.argsort(-learned, kind="stable")[:head_k].tolist()) if head_k else set(range(len(cands)))
    head = [i for i in range(len(cands)) if i in top]  # in pool order
    model = json.loads(default_blend_path().read_text(encoding="utf-8"))
    rows = list_rows(QUESTION, [cands[i] for i in head], [texts[i] for i in head])  # over the head alone
    trees = np.array([_walk(model, dict(zip(GBM_FEATURES, row, strict=True))) for row in rows])
    zl, zg = learned[head] - learned[head].mean(), trees - trees.mean()
    expected = {ids[i]: zl[j] / learned[head].std() + 0.5 * zg[j] / trees.std() for j, i in enumerate(head)}
    want = sorted(expected, key=lambda cid: (-expected[cid], cid))
    want += [ids[i] for i in sorted(set(range(len(cands))) - top, key=lambda i: (-learned[i], i))]

    settings = Settings(ranker="blend", ranker_blend_weight=0.5, ranker_blend_k=head_k)
    text_of = dict(zip(ids, texts, strict=True))
    pool_ = LearnedPool(ids, cands, lambda wanted: [text_of[cid] for cid in wanted])  # no statement: texts given
    got, scores, ranking = blend_order(None, settings, QUESTION, pool_, 10, True)  # type: ignore[arg-type]
    assert got == want
    for cid in got:
        assert sum(t.contribution for t in ranking[cid]) == pytest.approx(scores[cid], abs=1e-12)
        if cid in expected:
            assert scores[cid] == pytest.approx(expected[cid], abs=1e-9)
    assert [scores[cid] for cid in got] == sorted(scores.values(), reverse=True)


def test_the_blend_refuses_a_ranker_model_it_would_not_read(tmp_path: Path) -> None:
    """The blend orders by its two shipped models: a ``ranker_model`` (one model, of `kbgraph rank train`) given
    with it would be left unread, so it is a ConfigError naming the ranker that reads it."""
    model = tmp_path / "mine.json"
    model.write_text(default_blend_path().read_text())
    with pytest.raises(ConfigError, match="ranker=learned"):
        blend_order(None, Settings(ranker="blend", ranker_model=model), QUESTION, pool(), 5, False)  # type: ignore[arg-type]
