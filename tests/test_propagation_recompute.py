"""Score propagation's statements against a direct recomputation (issue 38): on a planted graph of three documents
with every kind of score term, each chunk's terms as ``propagate`` gives them (two statements and the details of
the top k: kbgraph.query.propagation.propagate) must equal the formula of docs/scoring.md computed here in Python from the
planted records alone, term by term: a term the statements drop or add, a wrong node, factor or exact similarity,
fails. Both stores."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

from kbgraph.ingest.write import write_documents
from kbgraph.models import (
    AtomicQuestionRecord,
    ChunkRecord,
    DocumentGraph,
    DocumentRecord,
    EntityRecord,
    MentionRecord,
    SectionRecord,
    TripleRecord,
)
from kbgraph.query.models import Seeds
from kbgraph.query.propagation.propagate import learned_pool, propagate, score_terms
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore

DIM = 384
WEIGHTS = {
    "weight_chunk": 1.0,
    "weight_question": 0.7,
    "weight_triple": 0.3,
    "weight_entity": 0.25,
    "weight_fulltext": 0.2,
    "weight_section": 0.15,
    "weight_document": 0.1,
    "weight_hop": 0.4,
    "weight_title_hop": 0.6,
    "weight_next": 0.05,
}
HOP_DOCUMENT_SHARE = 0.1  # the setting's default
OTHER = {"hop_from": 2, "rescore_k": 2, "max_entity_degree": 5, "ranker_bm25_k": 3, "ranker_pool": 4}


def _vec(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


CHUNK_VECTORS = {cid: _vec(100 + i) for i, cid in enumerate(["a1", "a2", "a3", "b1", "b2", "b3", "c1"])}


def _graph() -> tuple[list[DocumentGraph], dict[str, np.ndarray]]:
    """Documents A (two sections), B and C; A's a1 names B's title, a1, b2 and c1 share an entity, 'Big' is in
    more chunks than max_entity_degree. Returns the graphs and {chunk id: embedding}."""
    vecs = CHUNK_VECTORS
    ent = {
        "shared": EntityRecord(id="eShared", name="Shared", type="ORG", embedding=_vec(1).tolist()),
        "bravo": EntityRecord(id="eBravo", name="Bravo", type="TITLE", embedding=_vec(2).tolist()),
        "rare": EntityRecord(id="eRare", name="Rare", type="ORG", embedding=_vec(3).tolist()),
        "big": EntityRecord(id="eBig", name="Big", type="ORG", embedding=_vec(4).tolist()),
    }

    def chunk(cid: str, doc: str, parent: str, order: int) -> ChunkRecord:
        return ChunkRecord(
            id=cid, document_id=doc, parent_id=parent, text=f"text {cid}", order=order, embedding=vecs[cid].tolist()
        )

    def mentions(pairs: list[tuple[str, str]]) -> list[MentionRecord]:
        return [MentionRecord(chunk_id=c, entity_id=ent[e].id) for c, e in pairs]

    def doc(did: str, title: str, seed: int) -> DocumentRecord:
        return DocumentRecord(
            id=did,
            uri=f"file:///{title}.txt",
            title=title,
            mime="text/plain",
            sha256=did,
            embedding=_vec(seed).tolist(),
        )

    a = DocumentGraph(
        document=doc("doc:A", "Alpha", 10),
        sections=[
            SectionRecord(
                id="sA1",
                document_id="doc:A",
                parent_id="doc:A",
                title="One",
                level=1,
                path="One",
                order=0,
                embedding=_vec(11).tolist(),
            ),
            SectionRecord(
                id="sA2",
                document_id="doc:A",
                parent_id="doc:A",
                title="Two",
                level=1,
                path="Two",
                order=1,
                embedding=_vec(12).tolist(),
            ),
        ],
        chunks=[chunk("a1", "doc:A", "sA1", 0), chunk("a2", "doc:A", "sA1", 1), chunk("a3", "doc:A", "sA2", 2)],
        questions=[AtomicQuestionRecord(id="qa2", chunk_id="a2", text="What is a2?", embedding=_vec(20).tolist())],
        entities=list(ent.values()),
        mentions=mentions(
            [("a1", "shared"), ("a1", "bravo"), ("a2", "rare"), ("a1", "big"), ("a2", "big"), ("a3", "big")]
        ),
    )
    b = DocumentGraph(
        document=doc("doc:B", "Bravo", 13),
        chunks=[chunk("b1", "doc:B", "doc:B", 0), chunk("b2", "doc:B", "doc:B", 1), chunk("b3", "doc:B", "doc:B", 2)],
        questions=[AtomicQuestionRecord(id="qb2", chunk_id="b2", text="What is b2?", embedding=_vec(21).tolist())],
        entities=[ent["shared"], ent["bravo"], ent["big"]],
        mentions=mentions([("b1", "bravo"), ("b3", "bravo"), ("b2", "shared"), ("b1", "big"), ("b2", "big")]),
    )
    c = DocumentGraph(
        document=doc("doc:C", "Charlie", 14),
        chunks=[chunk("c1", "doc:C", "doc:C", 0)],
        entities=[ent["shared"], ent["big"]],
        triples=[
            TripleRecord(
                id="tc1",
                chunk_id="c1",
                subject="Shared",
                predicate="is",
                object="Big",
                subject_id="eShared",
                object_id="eBig",
                text="Shared is Big",
                embedding=_vec(30).tolist(),
            )
        ],
        mentions=mentions([("c1", "shared"), ("c1", "big")]),
    )
    return [a, b, c], vecs


# every chunk positively similar to the question (a Chunk term for each one rescored), b1 the most
_q = sum(CHUNK_VECTORS.values()) + CHUNK_VECTORS["b1"]
QUESTION_VECTOR = (_q / np.linalg.norm(_q)).tolist()
SEEDS = Seeds(
    layers={
        "Chunk": {"a1": (0.8, ""), "b3": (0.3, "")},
        "FullText": {"c1": (1.0, ""), "a3": (0.5, "")},
        "AtomicQuestion": {"qa2": (0.7, "What is a2?"), "qb2": (0.6, "What is b2?")},
        "Triple": {"tc1": (0.5, "Shared is Big")},
        "Entity": {"eRare": (0.6, "Rare"), "eShared": (0.4, "Shared"), "eBig": (0.9, "Big")},
        "EntityText": {"eShared": (1.0, "Shared")},
        "Section": {"sA1": (0.5, "One"), "sA2": (0.45, "Two")},
        "Document": {"doc:A": (0.4, "Alpha"), "doc:B": (0.3, "Bravo")},
    },
    query_vector=QUESTION_VECTOR,
    question="Who founded Bravo?",
)


def recompute(
    graphs: list[DocumentGraph], vecs: dict[str, np.ndarray], seeds: Seeds, k: int
) -> dict[str, dict[str, tuple[str, float]]]:
    """The formula of docs/scoring.md on the records: {chunk id: {term: (node id, score)}}."""
    w = WEIGHTS
    chunks = {c.id: c for g in graphs for c in g.chunks}
    doc_of = {c.id: c.document_id for c in chunks.values()}
    title = {g.document.id: g.document.title for g in graphs}
    mentions: dict[str, set[str]] = defaultdict(set)  # entity -> chunks
    for g in graphs:
        for m in g.mentions:
            mentions[m.entity_id].add(m.chunk_id)
    entity = {e.id: e for g in graphs for e in g.entities}
    of_question = {q.id: q.chunk_id for g in graphs for q in g.questions}
    of_triple = {t.id: t.chunk_id for g in graphs for t in g.triples}
    q = np.asarray(seeds.query_vector, dtype=np.float64)
    exact = {
        cid: float(np.dot(v.astype(np.float64), q) / np.linalg.norm(v) / np.linalg.norm(q)) for cid, v in vecs.items()
    }
    terms: dict[str, dict[str, tuple[str, float]]] = defaultdict(dict)

    def add(cid: str, term: str, node: str, score: float) -> None:
        if score > 0 and (term not in terms[cid] or score > terms[cid][term][1]):
            terms[cid][term] = (node, score)

    layers = seeds.layers
    for cid, (sim, _) in layers["Chunk"].items():
        add(cid, "Chunk", cid, w["weight_chunk"] * sim)
    for cid, (sim, _) in layers["FullText"].items():
        add(cid, "FullText", cid, w["weight_fulltext"] * sim)
    for qid, (sim, _) in layers["AtomicQuestion"].items():
        add(of_question[qid], "AtomicQuestion", qid, w["weight_question"] * sim)
    for tid, (sim, _) in layers["Triple"].items():
        add(of_triple[tid], "Triple", tid, w["weight_triple"] * sim)
    for layer, weight in (("Entity", w["weight_entity"]), ("EntityText", w["weight_fulltext"])):
        for eid, (sim, _) in layers[layer].items():
            if len(mentions[eid]) <= OTHER["max_entity_degree"]:
                for cid in mentions[eid]:
                    add(cid, layer, eid, weight * sim)
    section_of = {c.id: c.parent_id for c in chunks.values()}
    for cid in list(terms):
        if section_of[cid] in layers["Section"]:
            add(cid, "Section", section_of[cid], w["weight_section"] * layers["Section"][section_of[cid]][0])
        if doc_of[cid] in layers["Document"]:
            add(cid, "Document", doc_of[cid], w["weight_document"] * layers["Document"][doc_of[cid]][0])
    rescored = set(layers["Chunk"])

    def total(cid: str) -> float:
        return sum(s for _, s in terms[cid].values())

    def rescore() -> None:
        todo = sorted((c for c in terms if "Chunk" not in terms[c] and c not in rescored), key=lambda c: (-total(c), c))
        for cid in todo[: OTHER["rescore_k"]]:
            rescored.add(cid)
            add(cid, "Chunk", cid, w["weight_chunk"] * max(0.0, exact[cid]))

    rescore()
    s1 = {cid: total(cid) for cid in terms}
    sources = sorted(s1, key=lambda c: (-s1[c], c))
    documents = len({c.document_id for c in chunks.values()})
    for a in sources[: OTHER["hop_from"]]:
        for eid, linked in mentions.items():
            if a in linked and len(linked) <= OTHER["max_entity_degree"]:
                # into another document: the entity's IDF over documents, over log(1 / hop_document_share), <= 1
                idf = math.log(documents / len({doc_of[c] for c in linked}))
                across = min(1.0, idf / math.log(1 / HOP_DOCUMENT_SHARE))
                for b in linked - {a}:
                    specific = 1.0 if doc_of[b] == doc_of[a] else across
                    add(b, "Hop", a, w["weight_hop"] * s1[a] * specific / math.log2(1 + len(linked)))
            if a in linked and entity[eid].type == "TITLE":
                targets = [b for b in linked if title[doc_of[b]] == entity[eid].name and doc_of[b] != doc_of[a]]
                for b in targets:
                    add(b, "TitleHop", a, w["weight_title_hop"] * s1[a] / len(targets))
    order = {c.id: (c.document_id, c.order) for c in chunks.values()}
    for a in sources[: max(OTHER["hop_from"], k)]:
        for b in chunks:
            if order[b][0] == order[a][0] and abs(order[b][1] - order[a][1]) == 1:
                add(b, "Next", a, w["weight_next"] * s1[a])
    rescore()
    return {cid: by_term for cid, by_term in terms.items()}


def test_every_term_equals_a_direct_recomputation(store: GraphStore, backend_settings: Settings) -> None:
    graphs, vecs = _graph()
    write_documents(store, graphs)
    settings = backend_settings.updated({**WEIGHTS, **OTHER, "ranker": "weights"})
    expected = recompute(graphs, vecs, SEEDS, k=20)
    got = {c.id: c for c in propagate(store, settings, SEEDS, k=20, explain=True)}
    assert set(got) == set(expected)
    for cid, chunk in got.items():
        terms = {t.term: (t.node_id, t.score) for t in chunk.breakdown}
        assert set(terms) == set(expected[cid]), cid
        for term, (node, score) in expected[cid].items():
            assert terms[term][0] == node, (cid, term)
            assert terms[term][1] == pytest.approx(score, abs=1e-5), (cid, term)
        assert chunk.score == pytest.approx(sum(s for _, s in expected[cid].values()), abs=1e-5)
        assert chunk.document_title == {"a": "Alpha", "b": "Bravo", "c": "Charlie"}[cid[0]]
    # the planted graph has every term the statements compute, each of them somewhere
    assert {t for by_term in expected.values() for t in by_term} == {
        "Chunk",
        "FullText",
        "AtomicQuestion",
        "Triple",
        "Entity",
        "EntityText",
        "Section",
        "Document",
        "Hop",
        "TitleHop",
        "Next",
    }
    # rescoring reached both a layer's candidate (pass 1) and a hop's (pass 2) but not every candidate
    rescored = {cid for cid, by_term in expected.items() if "Chunk" in by_term} - set(SEEDS.layers["Chunk"])
    assert len(rescored) == 2 * OTHER["rescore_k"] and rescored < set(expected)


def test_the_learned_pool_has_the_titles_and_bm25_similarities_of_a_recomputation(
    store: GraphStore, backend_settings: Settings
) -> None:
    """With the learned ranker, a BM25 hit outside the weighted sum's pool joins it with its exact similarity as
    its Chunk term, and every pool chunk has its document's title (the title feature), without a statement."""
    graphs, vecs = _graph()
    write_documents(store, graphs)
    k = 2
    settings = backend_settings.updated({**WEIGHTS, **OTHER, "ranker": "learned"})
    weighted = recompute(graphs, vecs, SEEDS, k=k)
    totals = {cid: sum(s for _, s in t.values()) for cid, t in weighted.items()}
    head = sorted(totals, key=lambda c: (-totals[c], c))[: OTHER["ranker_pool"]]
    outside = [cid for cid in vecs if cid not in head and "Chunk" not in weighted.get(cid, {})]
    assert outside, "the planted graph has a chunk outside the pool without a Chunk term"
    seeds = SEEDS.model_copy(update={"bm25": [(outside[0], 4.0), (head[0], 2.0)]})
    terms, scores, ranked, reached = score_terms(store, settings, seeds, k=k)
    store.sent.clear()
    pool = learned_pool(store, settings, seeds, ranked, terms, scores, k, reached)
    assert not store.sent, "the pool's titles and similarities come from score_terms' rows"
    assert pool.ids == [*head, outside[0]]
    exact = float(np.dot(vecs[outside[0]].astype(np.float64), np.asarray(QUESTION_VECTOR)))
    assert pool.candidates[-1].terms["Chunk"][0] == pytest.approx(exact, abs=1e-5)
    titles = {"a": "Alpha", "b": "Bravo", "c": "Charlie"}
    assert [c.title for c in pool.candidates] == [titles[cid[0]] for cid in pool.ids]
    assert [c.bm25_rank for c in pool.candidates] == [1 if cid == head[0] else None for cid in head] + [0]
    # the statements' facts are those a pool without them reads from the store (chunk_details, similarities)
    terms2, scores2, ranked2, _ = score_terms(store, settings, seeds, k=k)
    slow = learned_pool(store, settings, seeds, ranked2, terms2, scores2, k, None)
    assert slow.ids == pool.ids and [c.title for c in slow.candidates] == [c.title for c in pool.candidates]
    assert slow.candidates[-1].terms["Chunk"][0] == pytest.approx(pool.candidates[-1].terms["Chunk"][0], abs=1e-12)
