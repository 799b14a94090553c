"""The learned ranker (kbgraph.query.propagation.ranking_learned): on a planted graph its order and scores equal an independent
recomputation from the explain terms of the weighted sum, on both stores; its explain contributions add up to
its score; the shipped model loads; a broken model is a clear error; the fit (kbgraph.eval.rank_train) learns a
planted signal and scores each set with a model fitted on the others."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from kbgraph.ingest.write import write_documents
from kbgraph.query.models import ScoredChunk, Seeds
from kbgraph.query.propagation.propagate import propagate
from kbgraph.query.propagation.ranking_learned import FEATURES, load_model

from kbgraph.errors import ConfigError
from kbgraph.models import ChunkRecord, DocumentGraph, DocumentRecord, EntityRecord, MentionRecord
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore
from tests.planted_pools import planted_pools
from tests.test_propagation import SEEDS, _hand_graph, _vec

LAYERS = [
    "Chunk",
    "AtomicQuestion",
    "Triple",
    "Entity",
    "EntityText",
    "FullText",
    "Section",
    "Document",
    "Tag",
    "Hop",
    "TitleHop",
    "Next",
    "TripleHop",
]


def _model(tmp_path: Path, coef: dict[str, float], intercept: float = 0.25) -> Path:
    """A model file over every feature: means 0.1, scales 2 (so standardisation is not a no-op)."""
    names = list(FEATURES)
    path = tmp_path / "model.json"
    path.write_text(
        json.dumps(
            {
                "features": names,
                "mean": [0.1] * len(names),
                "scale": [2.0] * len(names),
                "coef": [coef.get(n, 0.0) for n in names],
                "intercept": intercept,
            }
        )
    )
    return path


def _recompute(
    question: str,
    weighted: list[ScoredChunk],
    model: dict[str, Any],
    extra: Sequence[tuple[str, float, str]] = (),
    bm25: Sequence[tuple[str, float]] = (),
) -> dict[str, float]:
    """The learned score of each chunk, computed here from the weighted run's explain terms alone (and, for
    ``extra`` BM25 additions the weighted run did not return, (chunk id, its cosine, its title) from the planted
    vectors); ``bm25``: the seeds' (chunk id, BM25 score) list, best first."""
    entries = [
        (c.id, {t.term: t.similarity * t.factor for t in c.breakdown}, c.document_title, c.score) for c in weighted
    ]
    entries += sorted([(cid, {"Chunk": sim}, title, sim) for cid, sim, title in extra], key=lambda e: (-e[3], e[0]))
    chunk = {cid: terms.get("Chunk", 0.0) for cid, terms, _, _ in entries}
    weight = {cid: w for cid, _, _, w in entries}
    order = [cid for cid, _, _, _ in entries]  # pool order: ties keep it
    by_weight = sorted(order, key=lambda cid: -weight[cid])
    by_chunk = sorted(order, key=lambda cid: -chunk[cid])
    top_bm25 = bm25[0][1] if bm25 else 0.0
    bm25_rank = {cid: i for i, (cid, _) in enumerate(bm25)}
    out = {}
    for cid, terms, doc_title, w_sum in entries:
        title = re.sub(r"\s*\([^()]*\)\s*$", "", doc_title).lower()
        x = {layer: terms.get(layer, 0.0) for layer in LAYERS}
        x["has_chunk"] = 1.0 if "Chunk" in terms else 0.0
        x["title_in_q"] = 1.0 if len(title) >= 2 and re.search(rf"\b{re.escape(title)}\b", question.lower()) else 0.0
        x["rank_weighted"] = 1.0 / (1 + by_weight.index(cid))
        x["rank_chunk"] = 1.0 / (1 + by_chunk.index(cid))
        x["weighted"] = w_sum
        x["gap_chunk"] = chunk[cid] - max(chunk.values())
        x["gap_weighted"] = w_sum - max(weight.values())
        x["bm25"] = dict(bm25).get(cid, 0.0) / top_bm25 if top_bm25 else 0.0
        x["rank_bm25"] = 1.0 / (1 + bm25_rank[cid]) if cid in bm25_rank else 0.0
        out[cid] = model["intercept"] + sum(
            w * (x[n] - m) / s for n, m, s, w in zip(model["features"], model["mean"], model["scale"], model["coef"])
        )
    return out


def _lone_document() -> DocumentGraph:
    """Document 'Lone' with one chunk z9 that shares nothing with the hand graph."""
    return DocumentGraph(
        document=DocumentRecord(
            id="doc:Z", uri="file:///z.txt", title="Lone", mime="text/plain", sha256="z", embedding=_vec(98)
        ),
        chunks=[ChunkRecord(id="z9", document_id="doc:Z", parent_id="doc:Z", text="z9", order=0, embedding=_vec(99))],
    )


def _title_graph() -> list[DocumentGraph]:
    """Document A (chunk a1 names 'Bee'), document 'Bee' (b1, b2 mention it), document C (c1)."""
    title = EntityRecord(id="eB", name="Bee", type="TITLE", embedding=_vec(50))

    def doc(i: str, t: str) -> DocumentRecord:
        return DocumentRecord(
            id=f"doc:{i}", uri=f"file:///{i}.txt", title=t, mime="text/plain", sha256=i, embedding=_vec(ord(i))
        )

    def chunk(cid: str, d: str, n: int) -> ChunkRecord:
        return ChunkRecord(
            id=cid, document_id=f"doc:{d}", parent_id=f"doc:{d}", text=cid, order=n, embedding=_vec(60 + n + ord(d))
        )

    return [
        DocumentGraph(
            document=doc("A", "A"),
            chunks=[chunk("a1", "A", 0)],
            entities=[title],
            mentions=[MentionRecord(chunk_id="a1", entity_id="eB")],
        ),
        DocumentGraph(
            document=doc("B", "Bee"),
            chunks=[chunk("b1", "B", 1), chunk("b2", "B", 2)],
            entities=[title],
            mentions=[MentionRecord(chunk_id="b1", entity_id="eB"), MentionRecord(chunk_id="b2", entity_id="eB")],
        ),
        DocumentGraph(document=doc("C", "Sea"), chunks=[chunk("c1", "C", 3)]),
    ]


@pytest.mark.parametrize("graph", ["hand", "title", "bm25"])
def test_learned_order_equals_a_recomputation_from_the_explain_terms(
    store: GraphStore, backend_settings: Settings, tmp_path: Path, graph: str
) -> None:
    extra, bm25 = [], []
    if graph == "hand":
        write_documents(store, [_hand_graph()])
        seeds = SEEDS.model_copy(update={"question": "what does chunk one say?"})
    elif graph == "bm25":  # BM25 ranks c2 (in the pool) and z9, which no layer reaches: z9 joins the pool
        write_documents(store, [_hand_graph(), _lone_document()])
        bm25 = [("z9", 7.0), ("c2", 3.5), ("nope", 1.0)]
        qvec = _vec(77)
        seeds = SEEDS.model_copy(update={"question": "what does chunk one say?", "bm25": bm25, "query_vector": qvec})
        extra = [("z9", float(np.dot(qvec, _vec(99))), "Lone")]
    else:
        write_documents(store, _title_graph())
        seeds = Seeds(layers={"Chunk": {"a1": (0.9, ""), "c1": (0.8, "")}}, question="Who is Bee (the insect)?")
    coef = {
        "Chunk": -0.7,
        "Hop": 1.3,
        "TitleHop": 0.9,
        "Entity": 0.4,
        "title_in_q": 2.0,
        "rank_weighted": 0.5,
        "rank_chunk": -0.3,
        "weighted": 0.2,
        "gap_chunk": 0.6,
        "gap_weighted": -0.8,
        "has_chunk": 0.1,
        "FullText": -1.1,
        "AtomicQuestion": 0.35,
        "bm25": 0.9,
        "rank_bm25": -0.45,
    }
    path = _model(tmp_path, coef)
    base = backend_settings.updated({"hop_from": 10, "weight_title_hop": 0.6, "rescore_k": 0})
    weighted = propagate(store, base.updated({"ranker": "weights"}), seeds, k=50, explain=True)
    assert len(weighted) >= 3
    expected = _recompute(seeds.question, weighted, json.loads(path.read_text()), extra, bm25)
    want = sorted(expected, key=lambda cid: (-expected[cid], cid))

    learned_settings = base.updated({"ranker": "learned", "ranker_model": path})
    got = propagate(store, learned_settings, seeds, k=50, explain=True)
    assert [c.id for c in got] == want
    assert want != [c.id for c in weighted]  # the model re-orders: a test that the ranker ran at all
    for c in got:
        # (1e-6: a BM25 addition's cosine comes from the store's float32 vectors)
        assert c.score == pytest.approx(expected[c.id], abs=1e-6 if graph == "bm25" else 1e-9)
        assert 0.25 + sum(r.contribution for r in c.ranking) == pytest.approx(c.score, abs=1e-9)
        assert {r.feature for r in c.ranking} == set(FEATURES)
        # the propagation terms stay in the breakdown, as the weights ranker gives them (a BM25 addition: its
        # exact Chunk similarity alone)
        before = next((w for w in weighted if w.id == c.id), None)
        assert {t.term for t in c.breakdown} == ({t.term for t in before.breakdown} if before else {"Chunk"})
    if graph == "bm25":
        assert "z9" in expected and "z9" not in {c.id for c in weighted} and "z9" in {c.id for c in got}
        row = {r.feature: r.value for r in next(c for c in got if c.id == "c2").ranking}
        assert (row["bm25"], row["rank_bm25"]) == (0.5, 0.5)
    if graph == "title":
        assert {r.feature: r.value for r in got[0].ranking}["title_in_q"] in (0.0, 1.0)
        assert any({r.feature: r.value for r in c.ranking}["title_in_q"] == 1.0 for c in got if c.id.startswith("b"))
    # k smaller than the pool: the top of the same order
    top2 = propagate(store, learned_settings, seeds, k=2)
    assert [c.id for c in top2] == want[:2]


def test_the_shipped_model_loads_and_a_broken_one_is_a_clear_error(tmp_path: Path) -> None:
    model = load_model()
    assert set(model.features) <= set(FEATURES) and model.trained_on
    bad = tmp_path / "bad.json"
    bad.write_text('{"features": ["Chunk", "nope"], "mean": [0, 0], "scale": [1, 1], "coef": [1, 1]}')
    with pytest.raises(ConfigError, match="KBGRAPH_RANKER_MODEL.*|nope"):
        load_model(bad)
    with pytest.raises(ConfigError, match="no ranker model"):
        load_model(tmp_path / "missing.json")


def test_fit_learns_a_planted_signal_and_scores_each_set_by_the_others() -> None:
    from kbgraph.eval.rank_train import LabelledPool, fit, leave_one_out, recall

    rng = np.random.default_rng(0)

    def pools(n: int, gold_feature: str) -> list[LabelledPool]:
        return planted_pools(rng, n, FEATURES, gold_feature)

    by_set = {"a": pools(60, "title_in_q"), "b": pools(30, "title_in_q"), "c": pools(30, "title_in_q")}
    model = fit(by_set, pool=20)
    assert max(zip(model.coef, model.features))[1] == "title_in_q"
    assert recall(by_set["b"], model)["R@2"] > 90 > recall(by_set["b"], None)["R@2"]
    table = leave_one_out(by_set, pool=20)
    assert set(table) == {"a", "b", "c"} and all(row["leave_one_out"]["R@2"] > 90 for row in table.values())
