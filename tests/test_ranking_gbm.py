"""The gbm ranker (setting ``ranker=gbm``; kbgraph.query.propagation.ranking_gbm) through score propagation on a planted
graph, on both stores: its order and scores equal an independent recomputation (the list features of the
weighted run's pool, each planted tree walked from the model's JSON); its explanation adds up to its score.
The fit (kbgraph.eval.rank_train_gbm): LightGBM's trees, converted, score as LightGBM does, and a planted
signal is learned and scores each set with a model fitted on the others."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kbgraph.eval.rank_train import LabelledPool
from kbgraph.ingest.write import write_documents
from kbgraph.models import ChunkRecord, DocumentGraph, DocumentRecord
from kbgraph.query.models import Seeds
from kbgraph.query.propagation.propagate import propagate
from kbgraph.query.propagation.ranking_learned import Candidate
from kbgraph.query.propagation.ranking_lists import GBM_FEATURES, list_rows
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore
from tests.planted_pools import planted_pools
from tests.test_propagation import _vec
from tests.unit.test_ranking_gbm import PLANTED, _walk

QUESTION = "Who directed the film Blade Runner (1982)?"
PASSAGES = {
    "br1": ("Blade Runner (film)", "Blade Runner is a 1982 film directed by Ridley Scott."),
    "rs1": ("Ridley Scott", "Ridley Scott is an English director. He directed Alien."),
    "al1": ("Alien (film)", "Alien is a film by Ridley Scott and Fox."),
    "xx1": ("Fox", "Fox is a film studio."),
}


def _graph() -> list[DocumentGraph]:
    return [
        DocumentGraph(
            document=DocumentRecord(
                id=f"doc:{cid}",
                uri=f"file:///{cid}.txt",
                title=title,
                mime="text/plain",
                sha256=cid,
                embedding=_vec(200 + n),
            ),
            chunks=[
                ChunkRecord(
                    id=cid,
                    document_id=f"doc:{cid}",
                    parent_id=f"doc:{cid}",
                    text=text,
                    order=0,
                    embedding=_vec(300 + n),
                )
            ],
        )
        for n, (cid, (title, text)) in enumerate(PASSAGES.items())
    ]


def test_gbm_order_equals_a_recomputation(store: GraphStore, backend_settings: Settings, tmp_path: Path) -> None:
    write_documents(store, _graph())
    seeds = Seeds(
        layers={"Chunk": {"br1": (0.9, ""), "rs1": (0.5, ""), "al1": (0.45, ""), "xx1": (0.4, "")}}, question=QUESTION
    )
    path = tmp_path / "gbm.json"
    path.write_text(json.dumps(PLANTED))
    base = backend_settings.updated({"rescore_k": 0, "ranker_bm25_k": 0})
    weighted = propagate(store, base.updated({"ranker": "weights"}), seeds, k=50, explain=True)
    pool = [
        Candidate(
            terms={t.term: (t.similarity, t.factor) for t in c.breakdown}, title=c.document_title, weighted=c.score
        )
        for c in weighted
    ]
    rows = list_rows(QUESTION, pool, [c.text for c in weighted])
    expected = {
        c.id: _walk(PLANTED, dict(zip(GBM_FEATURES, row, strict=True))) for c, row in zip(weighted, rows, strict=True)
    }
    want = sorted(expected, key=lambda cid: (-expected[cid], cid))

    got = propagate(store, base.updated({"ranker": "gbm", "ranker_model": path}), seeds, k=50, explain=True)
    assert [c.id for c in got] == want
    assert want[0] == "rs1" and [c.id for c in weighted][0] == "br1"  # the bridge passage first: the ranker ran
    for c in got:
        assert c.score == pytest.approx(expected[c.id], abs=1e-12)
        assert sum(r.contribution for r in c.ranking) == pytest.approx(c.score, abs=1e-12)
        assert c.ranking[0].feature == "intercept"


def _pools(rng: np.random.Generator, n: int, gold_feature: str) -> list[LabelledPool]:
    return planted_pools(rng, n, GBM_FEATURES, gold_feature)


def test_converted_lightgbm_trees_score_as_lightgbm_and_learn_a_planted_signal() -> None:
    lightgbm = pytest.importorskip("lightgbm")
    from kbgraph.eval.rank_train import recall
    from kbgraph.eval.rank_train_gbm import PARAMS, fit_gbm, from_lightgbm, leave_one_out_gbm

    rng = np.random.default_rng(0)
    x = rng.random((600, len(GBM_FEATURES)))
    y = (x[:, 0] + x[:, 5] * x[:, 30] > 0.8).astype(int)
    booster = lightgbm.LGBMRanker(**{**PARAMS, "n_estimators": 40}).fit(x, y, group=[20] * 30)
    model = from_lightgbm(booster.booster_.dump_model(), pool=20)
    assert model.score(x).tolist() == pytest.approx(booster.predict(x).tolist(), abs=1e-12)

    by_set = {
        "a": _pools(rng, 60, "named_by_q"),
        "b": _pools(rng, 30, "named_by_q"),
        "c": _pools(rng, 30, "named_by_q"),
    }
    fitted = fit_gbm(by_set, pool=20, params={"n_estimators": 60})
    counts = fitted.split_counts()
    assert max(counts, key=lambda f: counts[f]) == "named_by_q"
    assert recall(by_set["b"], fitted)["R@2"] > 90 > recall(by_set["b"], None)["R@2"]
    table = leave_one_out_gbm(by_set, pool=20, params={"n_estimators": 60})
    assert set(table) == {"a", "b", "c"} and all(row["leave_one_out"]["R@2"] > 90 for row in table.values())
