"""The blend ranker (setting ``ranker=blend``; kbgraph.query.propagation.ranking_blend) through score propagation on a
planted graph, on both stores: its order and scores equal an independent recomputation from the learned ranker's
own scores and the shipped blend model's trees walked node by node over the list features of the head (the
learned ranker's best ``ranker_blend_k`` of the pool), each score standardised over the head, the gbm's weighted
by ``ranker_blend_weight``; the rest of the pool after the head in the learned order; its explanation adds up to
its score."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kbgraph.ingest.write import write_documents
from kbgraph.query.models import Seeds
from kbgraph.query.propagation.propagate import propagate
from kbgraph.query.propagation.ranking_learned import Candidate
from kbgraph.query.propagation.ranking_gbm import default_blend_path
from kbgraph.query.propagation.ranking_lists import GBM_FEATURES, list_rows
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore
from tests.test_ranking_gbm import QUESTION, _graph
from tests.unit.test_ranking_gbm import _walk


def _z(values: list[float]) -> np.ndarray:
    v = np.array(values)
    z: np.ndarray = (v - v.mean()) / v.std()
    return z


@pytest.mark.parametrize("head_k", [0, 2])
def test_blend_order_equals_a_recomputation(store: GraphStore, backend_settings: Settings, head_k: int) -> None:
    write_documents(store, _graph())
    # the learned order (xx1, br1, rs1, al1) is not the pool's (xx1, rs1, al1, br1): a head of 2 is not its prefix
    seeds = Seeds(
        layers={"Chunk": {"br1": (0.4, ""), "rs1": (0.5, ""), "al1": (0.45, ""), "xx1": (0.9, "")}}, question=QUESTION
    )
    base = backend_settings.updated(
        {"rescore_k": 0, "ranker_bm25_k": 0, "ranker_blend_weight": 0.7, "ranker_blend_k": head_k}
    )
    learned = {c.id: c.score for c in propagate(store, base.updated({"ranker": "learned"}), seeds, k=50)}
    weighted = propagate(store, base.updated({"ranker": "weights"}), seeds, k=50, explain=True)  # the pool's order
    assert set(learned) == {c.id for c in weighted} == {"br1", "rs1", "al1", "xx1"}  # one pool
    top = set(sorted(learned, key=lambda cid: (-learned[cid], cid))[:head_k]) if head_k else set(learned)
    head = [c for c in weighted if c.id in top]  # in pool order
    assert head_k == 0 or [c.id for c in weighted][:head_k] != [c.id for c in head]
    rows = list_rows(
        QUESTION,
        [
            Candidate(
                terms={t.term: (t.similarity, t.factor) for t in c.breakdown}, title=c.document_title, weighted=c.score
            )
            for c in head
        ],
        [c.text for c in head],
    )
    model = json.loads(default_blend_path().read_text(encoding="utf-8"))
    trees = [_walk(model, dict(zip(GBM_FEATURES, row, strict=True))) for row in rows]
    zl, zg = _z([learned[c.id] for c in head]), _z(trees)
    expected = {c.id: zl[i] + 0.7 * zg[i] for i, c in enumerate(head)}
    want = sorted(expected, key=lambda cid: (-expected[cid], cid))
    want += sorted(set(learned) - top, key=lambda cid: (-learned[cid], cid))  # the rest, in the learned order

    got = propagate(store, base.updated({"ranker": "blend"}), seeds, k=50, explain=True)
    assert [c.id for c in got] == want
    assert [c.score for c in got] == sorted((c.score for c in got), reverse=True)
    for c in got:
        assert sum(r.contribution for r in c.ranking) == pytest.approx(c.score, abs=1e-12)
        if c.id in top:
            assert c.score == pytest.approx(expected[c.id], abs=1e-9)
            assert [r.feature for r in c.ranking] == ["learned", "gbm"]
        else:
            assert [r.feature for r in c.ranking] == ["learned", "after_head"]
    top2 = propagate(store, base.updated({"ranker": "blend"}), seeds, k=2)
    assert [c.id for c in top2] == want[:2]
