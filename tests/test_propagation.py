"""Multi-granularity score propagation on a hand-built graph with known seed scores: the exact scores of
the formula in kbgraph.query.propagation.propagate with ``ranker=weights`` (today's weighted sum, unchanged by the learned
ranker; that ranker's own test is tests/test_ranking.py), on both stores; and hostile questions against ask."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kbgraph.errors import QueryError
from kbgraph.ingest.write import write_documents
from kbgraph.kb import KnowledgeBase
from kbgraph.models import (
    AtomicQuestionRecord,
    ChunkRecord,
    DocumentGraph,
    DocumentRecord,
    EntityRecord,
    MentionRecord,
    TripleRecord,
)
from kbgraph.query.models import Seeds
from kbgraph.query.propagation.propagate import propagate
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore

DIM = 384


def _vec(seed: int) -> list[float]:
    v = np.random.default_rng(seed).normal(size=DIM)
    out: list[float] = (v / np.linalg.norm(v)).tolist()
    return out


def _hand_graph() -> DocumentGraph:
    doc = DocumentRecord(id="doc:D", uri="file:///d.txt", title="D", mime="text/plain", sha256="x", embedding=_vec(1))
    chunks = [
        ChunkRecord(
            id=f"c{i}", document_id="doc:D", parent_id="doc:D", text=f"chunk {i}", order=i, embedding=_vec(10 + i)
        )
        for i in (1, 2, 3)
    ]
    e1 = EntityRecord(id="e1", name="Shared", type="ORG", embedding=_vec(20))
    e2 = EntityRecord(id="e2", name="Only two", type="ORG", embedding=_vec(21))
    return DocumentGraph(
        document=doc,
        chunks=chunks,
        questions=[AtomicQuestionRecord(id="q1", chunk_id="c1", text="What is chunk 1?", embedding=_vec(30))],
        entities=[e1, e2],
        triples=[
            TripleRecord(
                id="t1",
                chunk_id="c2",
                subject="Only two",
                predicate="is",
                object="Only two",
                subject_id="e2",
                object_id="e2",
                text="Only two is Only two",
                embedding=_vec(40),
            )
        ],
        mentions=[
            MentionRecord(chunk_id="c1", entity_id="e1"),
            MentionRecord(chunk_id="c3", entity_id="e1"),
            MentionRecord(chunk_id="c2", entity_id="e2"),
        ],
    )


SEEDS = Seeds(
    layers={
        "Chunk": {"c1": (0.9, ""), "c3": (0.4, "")},
        "AtomicQuestion": {"q1": (0.8, "What is chunk 1?")},
        "Triple": {"t1": (0.7, "Only two is Only two")},
        "Entity": {"e2": (0.6, "Only two"), "e1": (0.5, "Shared")},
        "FullText": {"c2": (1.0, "")},
        "Document": {"doc:D": (0.3, "D")},
    }
)


def test_propagated_scores_are_exactly_the_formula(store: GraphStore, backend_settings: Settings) -> None:
    write_documents(store, [_hand_graph()])
    s = backend_settings.updated(
        {
            "weight_chunk": 1.0,
            "weight_question": 0.8,
            "weight_triple": 0.3,
            "weight_entity": 0.3,
            "weight_fulltext": 0.2,
            "weight_section": 0.1,
            "weight_document": 0.2,
            "weight_hop": 0.5,
            "weight_next": 0.1,
            "hop_from": 10,
            "max_entity_degree": 50,
            "ranker": "weights",
        }
    )
    s1 = {
        "c1": 1.0 * 0.9 + 0.8 * 0.8 + 0.3 * 0.5 + 0.2 * 0.3,  # chunk, atomic question, entity e1, document
        "c2": 0.3 * 0.7 + 0.3 * 0.6 + 0.2 * 1.0 + 0.2 * 0.3,  # triple, entity e2, full text, document
        "c3": 1.0 * 0.4 + 0.3 * 0.5 + 0.2 * 0.3,  # chunk, entity e1, document
    }
    hop = 1 / math.log2(1 + 2)  # e1 is mentioned by two chunks; e2 by one (no neighbour)
    expected = {
        "c1": s1["c1"] + 0.5 * s1["c3"] * hop + 0.1 * s1["c2"],
        "c2": s1["c2"] + 0.1 * max(s1["c1"], s1["c3"]),
        "c3": s1["c3"] + 0.5 * s1["c1"] * hop + 0.1 * s1["c2"],
    }
    got = propagate(store, s, SEEDS, k=10, explain=True)
    assert [c.id for c in got] == ["c1", "c3", "c2"]
    for chunk in got:
        assert chunk.score == pytest.approx(expected[chunk.id], abs=1e-9)
        assert sum(t.score for t in chunk.breakdown) == pytest.approx(chunk.score, abs=1e-9)
        assert chunk.document_title == "D"
    c1 = {t.term: t for t in got[0].breakdown}
    assert set(c1) == {"Chunk", "AtomicQuestion", "Entity", "Document", "Hop", "Next"}
    assert c1["AtomicQuestion"].node_id == "q1" and c1["Hop"].node_id == "c3" and c1["Hop"].text == "Shared"

    # a weight set to zero removes exactly its terms
    no_hop = propagate(store, s.updated({"weight_hop": 0.0}), SEEDS, k=10)
    assert {c.id: c.score for c in no_hop}["c3"] == pytest.approx(s1["c3"] + 0.1 * s1["c2"], abs=1e-9)
    # entities in more chunks than max_entity_degree do not propagate
    capped = propagate(store, s.updated({"max_entity_degree": 1}), SEEDS, k=10)
    assert {c.id: c.score for c in capped}["c3"] == pytest.approx(1.0 * 0.4 + 0.2 * 0.3 + 0.1 * s1["c2"], abs=1e-9)


def test_chunk_term_is_exact_for_candidates_outside_the_chunk_seeds(
    store: GraphStore, backend_settings: Settings
) -> None:
    """c2 is reached only through its triple, entity and full text; with the question's vector in the seeds,
    its Chunk term is its exact cosine, computed in the database (here the question is c2's own vector)."""
    write_documents(store, [_hand_graph()])
    s = backend_settings.updated(
        {
            "weight_chunk": 1.0,
            "weight_question": 0.8,
            "weight_triple": 0.3,
            "weight_entity": 0.3,
            "weight_fulltext": 0.2,
            "weight_section": 0.1,
            "weight_document": 0.2,
            "weight_hop": 0.0,
            "weight_title_hop": 0.0,
            "weight_next": 0.0,
            "max_entity_degree": 50,
            "rescore_k": 10,
            "ranker": "weights",
        }
    )
    seeds = SEEDS.model_copy(update={"query_vector": _vec(12)})
    got = {c.id: c for c in propagate(store, s, seeds, k=10, explain=True)}
    c2_without = 0.3 * 0.7 + 0.3 * 0.6 + 0.2 * 1.0 + 0.2 * 0.3
    assert got["c2"].score == pytest.approx(c2_without + 1.0, abs=1e-5)
    chunk_term = next(t for t in got["c2"].breakdown if t.term == "Chunk")
    assert chunk_term.similarity == pytest.approx(1.0, abs=1e-5)
    # the seeded chunks keep their seed similarity
    assert next(t for t in got["c1"].breakdown if t.term == "Chunk").similarity == pytest.approx(0.9)
    # rescore_k 0: no exact term, the formula of the seeds alone
    off = {c.id: c.score for c in propagate(store, s.updated({"rescore_k": 0}), seeds, k=10)}
    assert off["c2"] == pytest.approx(c2_without, abs=1e-9)


def test_title_hop_is_shared_among_the_chunks_it_reaches(store: GraphStore, backend_settings: Settings) -> None:
    """a1 names document B's title; B's two chunks that mention it share w_TH · S1(a1); b3 does not mention
    the title and gets nothing; a chunk of A itself is never a title-hop target."""
    title = EntityRecord(id="eB", name="Bee", type="TITLE", embedding=_vec(50))
    doc_a = DocumentRecord(id="doc:A", uri="file:///a.txt", title="A", mime="text/plain", sha256="a", embedding=_vec(2))
    doc_b = DocumentRecord(
        id="doc:B", uri="file:///b.txt", title="Bee", mime="text/plain", sha256="b", embedding=_vec(3)
    )
    a1 = ChunkRecord(id="a1", document_id="doc:A", parent_id="doc:A", text="a1 names Bee", order=0, embedding=_vec(60))
    bs = [
        ChunkRecord(id=f"b{i}", document_id="doc:B", parent_id="doc:B", text=f"b{i}", order=i, embedding=_vec(60 + i))
        for i in (1, 2, 3)
    ]
    write_documents(
        store,
        [
            DocumentGraph(
                document=doc_a, chunks=[a1], entities=[title], mentions=[MentionRecord(chunk_id="a1", entity_id="eB")]
            ),
            DocumentGraph(
                document=doc_b,
                chunks=bs,
                entities=[title],
                mentions=[MentionRecord(chunk_id="b1", entity_id="eB"), MentionRecord(chunk_id="b2", entity_id="eB")],
            ),
        ],
    )
    s = backend_settings.updated(
        {
            "weight_chunk": 1.0,
            "weight_hop": 0.0,
            "weight_title_hop": 0.6,
            "weight_next": 0.0,
            "hop_from": 1,
            "rescore_k": 0,
            "ranker": "weights",
        }
    )
    seeds = Seeds(layers={"Chunk": {"a1": (0.9, "")}})
    got = {c.id: c for c in propagate(store, s, seeds, k=10, explain=True)}
    assert set(got) == {"a1", "b1", "b2"}
    for b in ("b1", "b2"):
        assert got[b].score == pytest.approx(0.6 * 0.9 / 2, abs=1e-9)
        (term,) = got[b].breakdown
        assert (term.term, term.node_id, term.text, term.factor) == ("TitleHop", "a1", "Bee", 0.5)
    assert got["a1"].score == pytest.approx(0.9)


def _five_documents() -> list[DocumentGraph]:
    """Documents A-E: A's a1 and a2 share 'Zeta widget' (specific, within A); a1 and one chunk of each other
    document mention 'Revenue' (generic: every document); a1 and C's chunk also share 'Bridge' (two documents)."""
    revenue, zeta, bridge = (
        EntityRecord(id=i, name=n, type="ORG", embedding=_vec(s))
        for i, n, s in (("eRev", "Revenue", 70), ("eZeta", "Zeta widget", 71), ("eBridge", "Bridge", 72))
    )
    graphs = []
    for n, name in enumerate("ABCDE"):
        doc = DocumentRecord(
            id=f"doc:{name}",
            uri=f"file:///{name}.txt",
            title=name,
            mime="text/plain",
            sha256=name,
            embedding=_vec(80 + n),
        )
        ids = ["a1", "a2"] if name == "A" else [f"x{name}"]
        chunks = [
            ChunkRecord(
                id=c, document_id=doc.id, parent_id=doc.id, text=f"text {c}", order=i, embedding=_vec(90 + 10 * n + i)
            )
            for i, c in enumerate(ids)
        ]
        mentions = [MentionRecord(chunk_id=ids[0], entity_id="eRev")]
        if name == "A":
            mentions += [MentionRecord(chunk_id=c, entity_id="eZeta") for c in ids]
        if name in "AC":
            mentions.append(MentionRecord(chunk_id=ids[0], entity_id="eBridge"))
        graphs.append(DocumentGraph(document=doc, chunks=chunks, entities=[revenue, zeta, bridge], mentions=mentions))
    return graphs


def test_a_generic_entity_does_not_carry_score_into_other_documents(
    store: GraphStore, backend_settings: Settings
) -> None:
    """Issue 56: 'Revenue' is in every document, so a1's score does not hop through it into B-E, and B's chunk
    (a little similar on its own) stays below a2, which shares a specific entity with a1 inside A; 'Bridge' (2 of 5
    documents) still carries it into C, weighted by its IDF over documents. hop_document_share 1: the old order."""
    write_documents(store, _five_documents())
    s = backend_settings.updated(
        {
            "weight_chunk": 1.0,
            "weight_question": 0.0,
            "weight_triple": 0.0,
            "weight_entity": 0.0,
            "weight_fulltext": 0.0,
            "weight_section": 0.0,
            "weight_document": 0.0,
            "weight_hop": 0.5,
            "weight_title_hop": 0.0,
            "weight_next": 0.0,
            "hop_from": 1,
            "rescore_k": 0,
            "ranker": "weights",
        }
    )
    seeds = Seeds(layers={"Chunk": {"a1": (0.9, ""), "xB": (0.2, "")}})
    got = propagate(store, s, seeds, k=10, explain=True)
    order = [c.id for c in got]
    assert order.index("a2") < order.index("xB")
    by_id = {c.id: c for c in got}
    assert by_id["a2"].score == pytest.approx(0.5 * 0.9 / math.log2(1 + 2), abs=1e-9)
    assert {t.term for t in by_id["xB"].breakdown} == {"Chunk"}  # no hop through 'Revenue'
    assert "xD" not in by_id and "xE" not in by_id
    (hop,) = by_id["xC"].breakdown
    specific = math.log(5 / 2) / math.log(1 / 0.1)
    assert (hop.term, hop.text) == ("Hop", "Bridge")
    assert hop.factor == pytest.approx(specific / math.log2(1 + 2), abs=1e-9)
    old = [c.id for c in propagate(store, s.updated({"hop_document_share": 1.0}), seeds, k=10)]
    assert old.index("xB") < old.index("a2") and {"xD", "xE"} <= set(old)


@pytest.fixture
def small_kb(falkor_settings: Settings, examples_dir: Path, tmp_path: Path) -> Iterator[KnowledgeBase]:
    src = examples_dir / "multihop/musique/hipporag_train100.corpus.jsonl"
    corpus = tmp_path / "small.jsonl"
    corpus.write_text("\n".join(src.read_text(encoding="utf-8").splitlines()[:30]) + "\n", encoding="utf-8")
    kb = KnowledgeBase(settings=falkor_settings.updated({"name": "hostile"}))
    kb.reset()
    kb.ingest([corpus], progress=False)
    yield kb
    kb.close()


def test_hostile_questions_get_a_clear_error_or_a_safe_answer(small_kb: KnowledgeBase) -> None:
    before = small_kb.stats()
    for bad in ["", "   \n\t ", "\x00\x01"]:
        with pytest.raises(QueryError, match="empty"):
            small_kb.ask(bad)
    with pytest.raises(QueryError, match="limit"):
        small_kb.ask("why " * 25_000)  # 100 KB
    with pytest.raises(QueryError, match="unknown method"):
        small_kb.ask("Who?", method="drop database")
    for hostile in [
        "\"quoted\" and 'single'",
        "`backticks` MATCH (n) DETACH DELETE n",
        "}) RETURN 1 //",
        "') CALL db.labels() //",
        "a-b:c (((",
        "AND OR NOT *",
        "Journal of Mathematical Physics?",
    ]:
        answer = small_kb.ask(hostile)
        assert answer.retrieval_only and answer.citations
    after = small_kb.stats()
    assert after.nodes == before.nodes and after.relationships == before.relationships
