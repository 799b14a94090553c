"""The blend ranker (setting ``ranker=blend``; kbgraph.query.ranking_blend) through score propagation on a
planted graph, on both stores: its order and scores equal an independent recomputation from the learned and the
gbm rankers' own scores of the same pool (each standardised over the pool, the gbm's weighted by
``ranker_blend_weight``), and its explanation adds up to its score."""

from __future__ import annotations

import numpy as np
import pytest

from kbgraph.ingest.write import write_documents
from kbgraph.query.models import Seeds
from kbgraph.query.propagation import propagate
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore
from tests.test_ranking_gbm import QUESTION, _graph


def _z(scores: dict[str, float]) -> dict[str, float]:
    values = np.array(list(scores.values()))
    return {cid: (s - values.mean()) / values.std() for cid, s in scores.items()}


def test_blend_order_equals_a_recomputation(store: GraphStore, backend_settings: Settings) -> None:
    write_documents(store, _graph())
    seeds = Seeds(layers={"Chunk": {"br1": (0.9, ""), "rs1": (0.5, ""), "al1": (0.45, ""), "xx1": (0.4, "")}},
                  question=QUESTION)  # fmt: skip
    base = backend_settings.updated({"rescore_k": 0, "ranker_bm25_k": 0, "ranker_blend_weight": 0.7})
    learned = {c.id: c.score for c in propagate(store, base.updated({"ranker": "learned"}), seeds, k=50)}
    gbm = {c.id: c.score for c in propagate(store, base.updated({"ranker": "gbm"}), seeds, k=50)}
    assert set(learned) == set(gbm) == {"br1", "rs1", "al1", "xx1"}  # one pool
    zl, zg = _z(learned), _z(gbm)
    expected = {cid: zl[cid] + 0.7 * zg[cid] for cid in learned}
    want = sorted(expected, key=lambda cid: (-expected[cid], cid))

    got = propagate(store, base.updated({"ranker": "blend"}), seeds, k=50, explain=True)
    assert [c.id for c in got] == want
    for c in got:
        assert c.score == pytest.approx(expected[c.id], abs=1e-9)
        assert [r.feature for r in c.ranking] == ["learned", "gbm"]
        assert sum(r.contribution for r in c.ranking) == pytest.approx(c.score, abs=1e-12)
        assert c.ranking[1].contribution == pytest.approx(0.7 * zg[c.id], abs=1e-9)
    top2 = propagate(store, base.updated({"ranker": "blend"}), seeds, k=2)
    assert [c.id for c in top2] == want[:2]
