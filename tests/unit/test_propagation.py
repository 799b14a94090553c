"""Score propagation's formula (kbgraph.query.propagation.propagate, docs/scoring.md) on planted graph rows: a stand-in
store answers the traversal statements with fixed rows, so every term can be computed by hand."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, cast

import pytest

from kbgraph.query.models import Seeds
from kbgraph.query.propagation.propagate import Scored, propagate, score_terms
from kbgraph.query.propagation.terms import add_term as _add, layer_sum as _layer_sum
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore, Row


class PlantedStore:
    """Answers the statements score propagation runs with planted rows, as the database would: every row carries
    its chunk's document title and, when the statement is asked for similarities, the chunk's planted exact
    similarity (``score``, already a cosine: ``vector_similarity`` is the identity); ``retrieve/layer_candidates``
    also answers for the chunks of ``$chunk_ids``. Records what it was asked. A stand-in for a GraphStore (an ABC)
    with the methods score propagation calls, cast to one where it is passed."""

    def __init__(self, rows: dict[str, list[Row]], similarities: dict[str, float]) -> None:
        self.rows, self.similarities = rows, similarities
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def run(self, name: str, params: dict[str, Any]) -> list[Row]:
        self.calls.append((name, params))
        if name == "retrieve/chunk_details":
            return [{"id": cid, "text": f"text of {cid}", "document_title": "Doc"} for cid in params["ids"]]
        rows = list(self.rows[name])
        if name == "retrieve/layer_candidates":
            rows = [{"layer": "Chunk", "via": cid, "chunk_id": cid} for cid in params["chunk_ids"]] + rows
        return [
            {
                **row,
                "title": "Doc",
                "score": self.similarities.get(row["chunk_id"])
                if params["with_similarity"] and row.get("layer") != "Section"
                else None,
            }
            for row in rows
        ]

    def check_vector(self, vector: list[float]) -> list[float]:
        return vector

    def vector_similarity(self, score: float) -> float:
        return score

    def chunk_similarities(self, ids: list[str], vector: list[float]) -> dict[str, float]:
        self.calls.append(("chunk_similarities", {"ids": list(ids)}))
        return {cid: self.similarities[cid] for cid in ids if cid in self.similarities}


SEEDS = Seeds(
    layers={
        "Chunk": {"c1": (0.9, ""), "c2": (0.5, "")},
        "AtomicQuestion": {"q1": (0.8, "who?")},
        "Section": {"s1": (0.6, "Intro")},
    },
    query_vector=[1.0, 0.0],
    question="who?",
    generation=[4, 1, "run", "now", "complete"],
)
ROWS: dict[str, list[Row]] = {
    "retrieve/layer_candidates": [
        {"layer": "AtomicQuestion", "via": "q1", "chunk_id": "c3"},
        {"layer": "AtomicQuestion", "via": "q1", "chunk_id": "c2"},
        {"layer": "Section", "via": "s1", "chunk_id": "c1"},
        {"layer": "Section", "via": "s1", "chunk_id": "c9"},  # a prior only: c9 has no other term
    ],
    "retrieve/hop_neighbours": [
        {
            "kind": "Hop",
            "from_id": "c1",
            "via": "e1",
            "chunk_id": "c4",
            "text": "Entity",
            "degree": 3,
            "specificity": 0.5,
        },  # into another document, through an entity of half its IDF for full weight
        {"kind": "TitleHop", "from_id": "c1", "via": "e2", "chunk_id": "c5", "text": "Title"},
        {"kind": "TitleHop", "from_id": "c1", "via": "e2", "chunk_id": "c6", "text": "Title"},
        {"kind": "Next", "from_id": "c2", "via": "", "chunk_id": "c1", "text": ""},
    ],
}
SIMILARITIES = {"c3": 0.7, "c4": 0.3, "c5": 0.2, "c6": 0.1}


def scored(**settings: Any) -> tuple[PlantedStore, Scored]:
    store = PlantedStore(ROWS, SIMILARITIES)
    return store, score_terms(cast(GraphStore, store), Settings(ranker="weights", **settings), SEEDS, k=5)


def test_the_formula_by_hand() -> None:
    _, (terms, scores, ranked, _) = scored()
    s1 = {"c1": 0.9 + 0.05 * 0.6, "c2": 0.5 + 0.1 * 0.8, "c3": 0.1 * 0.8 + 0.7}
    expected = {
        "c1": s1["c1"] + 0.05 * s1["c2"],  # NEXT from c2
        "c2": s1["c2"],
        "c3": s1["c3"],
        "c4": 0.3 * s1["c1"] * 0.5 / math.log2(1 + 3) + 0.3,  # entity hop damped by the degree and the
        # entity's specificity, then rescored
        "c5": 0.5 * s1["c1"] / 2 + 0.2,  # title hop shared by the 2 chunks it reaches
        "c6": 0.5 * s1["c1"] / 2 + 0.1,
    }
    assert scores == pytest.approx(expected)
    assert ranked == ["c1", "c3", "c2", "c5", "c4", "c6"]
    assert set(terms["c1"]) == {"Chunk", "Section", "Next"} and set(terms["c4"]) == {"Hop", "Chunk"}


def test_a_section_prior_only_for_chunks_that_have_a_score() -> None:
    _, (terms, scores, _, _) = scored()
    assert "c9" not in scores and "Section" not in terms["c2"]


def test_a_zero_weight_removes_its_term_and_its_statement_parameters() -> None:
    store, (terms, scores, _, _) = scored(weight_question=0.0, weight_hop=0.0)
    assert not any("AtomicQuestion" in t or "Hop" in t for t in terms.values())
    layer_params = dict(store.calls)["retrieve/layer_candidates"]
    assert layer_params["question_ids"] == [] and layer_params["section_ids"] == ["s1"]
    assert dict(store.calls)["retrieve/hop_neighbours"]["entity_hop_sources"] == []
    assert "c3" not in scores and "c4" not in scores  # reached only through the terms weighted 0


def test_rescoring_gives_candidates_their_exact_chunk_similarity_from_the_rows() -> None:
    store, (terms, _, _, reached) = scored()
    assert [name for name, _ in store.calls] == ["retrieve/layer_candidates", "retrieve/hop_neighbours"]
    assert all(params["with_similarity"] for _, params in store.calls)
    assert {c: terms[c]["Chunk"][3] for c in ("c3", "c4", "c5", "c6")} == SIMILARITIES
    assert reached.titles["c4"] == "Doc"
    # rescore_k 1: only the best candidate of each pass (the layers' c3; the hops' c5, by its TitleHop term)
    _, (terms, _, _, _) = scored(rescore_k=1)
    assert [c for c in ("c3", "c4", "c5", "c6") if "Chunk" in terms[c]] == ["c3", "c5"]
    store, (terms, _, _, _) = scored(rescore_k=0)
    assert not any(params["with_similarity"] for _, params in store.calls)
    assert "Chunk" not in terms["c3"]


def test_hops_start_only_from_the_hop_from_best_chunks() -> None:
    store, _ = scored(hop_from=1)
    params = dict(store.calls)["retrieve/hop_neighbours"]
    assert [s["id"] for s in params["entity_hop_sources"]] == ["c1"] and params["title_hop_ids"] == ["c1"]
    assert params["next_ids"] == ["c1", "c3", "c2"]  # NEXT from the top max(hop_from, k)


def test_a_layer_keeps_its_best_term_only() -> None:
    terms: dict[str, dict[str, Any]] = defaultdict(dict)
    _add(terms, "c", "Entity", "e1", "a", 0.5, 0.1)
    _add(terms, "c", "Entity", "e2", "b", 0.9, 0.1)  # better: replaces
    _add(terms, "c", "Entity", "e3", "c", 0.7, 0.1)  # worse: ignored
    _add(terms, "c", "Triple", "t1", "", 0.0, 0.1)  # no similarity: nothing
    _add(terms, "c", "Next", "c0", "", 0.8, 0.0)  # weight 0: nothing
    _add(terms, "c", "Hop", "c0", "", 0.8, 0.3, 0.5)
    assert set(terms["c"]) == {"Entity", "Hop"}
    assert terms["c"]["Entity"][1] == "e2"
    assert _layer_sum(terms["c"]) == pytest.approx(0.1 * 0.9 + 0.3 * 0.8 * 0.5)


def test_propagate_explains_each_score_exactly() -> None:
    store = PlantedStore(ROWS, SIMILARITIES)
    chunks = propagate(cast(GraphStore, store), Settings(ranker="weights"), SEEDS, k=3, explain=True)
    assert [c.id for c in chunks] == ["c1", "c3", "c2"]
    for chunk in chunks:
        assert chunk.score == pytest.approx(sum(t.score for t in chunk.breakdown))
        assert all(t.score == pytest.approx(t.weight * t.similarity * t.factor) for t in chunk.breakdown)
        assert chunk.document_title == "Doc" and chunk.text == f"text of {chunk.id}"
    assert [t.term for t in chunks[0].breakdown] == ["Chunk", "Section", "Next"]  # largest first
