"""The in-memory adjacency of score propagation (kbgraph.query.propagation.adjacency, setting ``adjacency_cache``): its rows
equal those of ``retrieve/layer_candidates`` and ``retrieve/hop_neighbours`` for the same parameters, row for row
(every layer, every hop, the degree bounds, a document left 'writing', the titles and the exact similarities);
with it built, score propagation sends neither statement and gives every term of the direct recomputation of
tests/test_propagation_recompute; and an ingestion or a deletion (a new corpus generation) makes the next
question read the graph again. Both stores."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from kbgraph.ingest.write import write_documents
from kbgraph.models import ChunkRecord, DocumentGraph, DocumentRecord, EntityRecord, MentionRecord, TripleRecord
from kbgraph.query.propagation import adjacency, adjacency_cache, ranking_gbm
from kbgraph.query.propagation.adjacency import Adjacency
from kbgraph.query.propagation.adjacency_cache import shared_adjacency
from kbgraph.query.bm25 import corpus_generation
from kbgraph.query.graph import chunk_details
from kbgraph.query.propagation.propagate import propagate
from kbgraph.query.propagation.ranking_gbm import pool_texts
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore, Row
from kbgraph.store.schema import VECTOR_WRITES
from tests.test_propagation_recompute import OTHER, QUESTION_VECTOR, SEEDS, WEIGHTS, _graph, _vec, recompute


def _plant(store: GraphStore) -> None:
    """The recomputation's graph (documents A, B, C), a document D left 'writing' whose chunk d1 mentions Shared
    and Bravo and states triple td1 (Shared RELATED Rare, which a2 mentions), and a corpus tag on a1, b2 and d1.
    Triple tc1 relates Shared to Big (in 6 chunks)."""
    graphs, _ = _graph()
    shared, bravo, rare = (
        EntityRecord(id=i, name=n, type=t, embedding=_vec(s).tolist())
        for i, n, t, s in (
            ("eShared", "Shared", "ORG", 1),
            ("eBravo", "Bravo", "TITLE", 2),
            ("eRare", "Rare", "ORG", 3),
        )
    )
    d = DocumentGraph(
        document=DocumentRecord(
            id="doc:D",
            uri="file:///Delta.txt",
            title="Delta",
            mime="text/plain",
            sha256="D",
            embedding=_vec(15).tolist(),
        ),
        chunks=[
            ChunkRecord(
                id="d1", document_id="doc:D", parent_id="doc:D", text="text d1", order=0, embedding=_vec(40).tolist()
            )
        ],
        entities=[shared, bravo, rare],
        triples=[
            TripleRecord(
                id="td1",
                chunk_id="d1",
                subject="Shared",
                predicate="knows",
                object="Rare",
                subject_id="eShared",
                object_id="eRare",
                text="Shared knows Rare",
                embedding=_vec(31).tolist(),
            )
        ],
        mentions=[MentionRecord(chunk_id="d1", entity_id="eShared"), MentionRecord(chunk_id="d1", entity_id="eBravo")],
    )
    write_documents(store, [*graphs, d])
    row = d.document.model_dump()
    row["embedding"] = store.check_vector(row["embedding"], VECTOR_WRITES["ingest/upsert_document"])
    store.run("ingest/upsert_document", {"rows": [row]})  # D back to 'writing', as a killed run leaves it
    tag = {
        "id": "tag1",
        "name": "founding",
        "norm": "founding",
        "class": "EVENT",
        "embedding": store.check_vector(_vec(50), "Tag"),
    }
    store.run("tags/upsert_tags", {"rows": [tag], "now": 0})
    store.run("tags/link_tagged", {"rows": [{"chunk_id": c, "tag_id": "tag1"} for c in ("a1", "b2", "d1")]})


def _canonical(store: GraphStore, rows: list[Row]) -> list[tuple[Any, ...]]:
    """Rows as sorted tuples, the statements' ``score`` (the store's distance) as the cosine ``similarity``."""
    out = []
    for row in rows:
        row = dict(row)
        if "score" in row:
            score = row.pop("score")
            row["similarity"] = None if score is None else store.vector_similarity(score)
        if row.get("specificity") is not None:  # computed in the store's floats and in Python's
            row["specificity"] = round(float(row["specificity"]), 9)
        if row.get("similarity") is not None:
            row["similarity"] = round(row["similarity"], 5)
        else:  # a null score: not read (without with_similarity, or a Section row); what propagation reads as None
            row.pop("similarity", None)
        out.append(tuple(sorted(row.items())))
    return sorted(out, key=repr)


LAYER_CASES: list[Row] = [
    {
        "chunk_ids": ["a1", "b3", "c1", "d1", "missing"],
        "question_ids": ["qa2", "qb2"],
        "triple_ids": ["tc1", "td1"],
        "entity_seeds": [{"id": "eRare", "sim": 0.6}, {"id": "eShared", "sim": 0.4}, {"id": "eBig", "sim": 0.9}],
        "entity_text_seeds": [{"id": "eShared", "sim": 1.0}, {"id": "eBravo", "sim": 1.0}],
        "tag_seeds": [{"id": "tag1", "sim": 0.8}],
        "section_ids": ["sA1", "sA2"],
    },
    {
        "chunk_ids": [],
        "question_ids": [],
        "triple_ids": [],
        "entity_seeds": [{"id": "eShared", "sim": 0.5}],
        "entity_text_seeds": [],
        "tag_seeds": [{"id": "tag1", "sim": 0.3}],
        "section_ids": [],
    },
]
HOP_CASES: list[Row] = [
    {
        "entity_hop_sources": [{"id": "a1", "score": 0.9}, {"id": "c1", "score": 0.5}, {"id": "d1", "score": 0.4}],
        "title_hop_ids": ["a1", "d1", "b1"],
        "next_ids": ["a2", "b1", "d1"],
        "triple_hop_seeds": [{"id": "eShared", "sim": 0.7}, {"id": "eRare", "sim": 0.2}],
    },
    {
        "entity_hop_sources": [{"id": "a2", "score": 0.3}],
        "title_hop_ids": [],
        "next_ids": ["a3"],
        "triple_hop_seeds": [],
    },
]


#: an entity hop's specificity across documents (retrieve/hop_neighbours): 4 documents, full weight at IDF log 10
SPECIFIC: Row = {"document_count": 4, "specific_idf": math.log(10)}


@pytest.mark.parametrize("with_titles", [True, False])
@pytest.mark.parametrize("with_similarity", [True, False])
def test_rows_equal_the_statements(store: GraphStore, with_titles: bool, with_similarity: bool) -> None:
    _plant(store)
    view = Adjacency(store)
    flags: Row = {
        "with_titles": with_titles,
        "with_similarity": with_similarity,
        "embedding": store.check_vector(QUESTION_VECTOR) if with_similarity else None,
    }
    for bound in (5, 3):
        for case in LAYER_CASES:
            params = {**case, **flags, "max_degree": bound, "tag_max_degree": 2 if bound == 3 else 5}
            expected = _canonical(store, store.run("retrieve/layer_candidates", params))
            assert _canonical(store, view.layer_rows(params)) == expected
            assert expected or bound == 3  # every case has rows (at bound 3 the second has none: degrees 4, 3)
        for case in HOP_CASES:
            params = {**case, **flags, "max_degree": bound, **SPECIFIC}
            expected = _canonical(store, store.run("retrieve/hop_neighbours", params))
            assert _canonical(store, view.hop_rows(params)) == expected
            assert expected
    # the planted graph exercises every row kind, and a 'writing' document's chunk is never a row
    every = [
        *view.layer_rows({**LAYER_CASES[0], **flags, "max_degree": 5, "tag_max_degree": 5}),
        *view.hop_rows({**HOP_CASES[0], **flags, "max_degree": 5, **SPECIFIC}),
    ]
    # an entity hop into another document is weighted by the entity's specificity (IDF over the documents)
    assert {r["specificity"] for r in every if r.get("kind") == "Hop"} - {1.0}
    assert {r.get("layer") or r.get("kind") for r in every} == {
        "Chunk",
        "AtomicQuestion",
        "Triple",
        "Entity",
        "EntityText",
        "Tag",
        "Section",
        "Hop",
        "TitleHop",
        "Next",
        "TripleHop",
    }
    assert "d1" not in {r["chunk_id"] for r in every}
    ids = [*view.ids, "missing"]  # the top's details (retrieve/chunk_details), d1's left out as the statement does
    assert view.details(ids) == chunk_details(store, ids) and "d1" not in view.details(ids)


def test_propagation_with_the_adjacency_sends_no_traversal_and_equals_the_recomputation(
    store: GraphStore, backend_settings: Settings
) -> None:
    graphs, vecs = _graph()
    write_documents(store, graphs)
    settings = backend_settings.updated({**WEIGHTS, **OTHER, "ranker": "weights", "adjacency_cache": True})
    generation = corpus_generation(store)
    assert shared_adjacency(store, settings, generation, wait=True) is not None
    seeds = SEEDS.model_copy(update={"generation": generation})
    store.sent.clear()
    got = {c.id: c for c in propagate(store, settings, seeds, k=20, explain=True)}
    assert store.sent["retrieve/layer_candidates"] == 0 and store.sent["retrieve/hop_neighbours"] == 0
    assert store.sent["retrieve/chunk_details"] == 0  # nor the top's details
    expected = recompute(graphs, vecs, SEEDS, k=20)
    assert set(got) == set(expected)
    for cid, chunk in got.items():
        terms = {t.term: (t.node_id, t.score) for t in chunk.breakdown}
        assert {t: node for t, (node, _) in terms.items()} == {t: node for t, (node, _) in expected[cid].items()}
        for term, (_, score) in expected[cid].items():
            assert terms[term][1] == pytest.approx(score, abs=1e-5), (cid, term)
    off = settings.updated({"adjacency_cache": False})  # the setting off: the statements again
    store.sent.clear()
    assert [c.id for c in propagate(store, off, seeds, k=20)] == list(got)
    assert store.sent["retrieve/layer_candidates"] == 1 and store.sent["retrieve/hop_neighbours"] == 1
    assert store.sent["retrieve/chunk_details"] == 1


@pytest.mark.parametrize("ranker", ["gbm", "blend"])
def test_the_gbm_rankers_take_the_pool_texts_from_the_adjacency(
    store: GraphStore, backend_settings: Settings, ranker: str
) -> None:
    """The gbm and blend rankers' list features read the pool's texts: from the adjacency, with no
    ``retrieve/pool_texts``, and the same order and scores as with the statement."""
    graphs, _ = _graph()
    write_documents(store, graphs)
    settings = backend_settings.updated({**WEIGHTS, **OTHER, "ranker": ranker, "adjacency_cache": True})
    generation = corpus_generation(store)
    view = shared_adjacency(store, settings, generation, wait=True)
    assert view is not None
    ids = [*view.ids, "missing"]
    assert view.texts(ids) == pool_texts(store, ids) and view.texts(["missing"]) == [""]
    seeds = SEEDS.model_copy(update={"generation": generation})
    ranking_gbm._FACTS.clear()  # no text kept from an earlier question
    store.sent.clear()
    got = [(c.id, c.score) for c in propagate(store, settings, seeds, k=20)]
    assert store.sent["retrieve/pool_texts"] == 0
    ranking_gbm._FACTS.clear()
    store.sent.clear()
    statements = [(c.id, c.score) for c in propagate(store, settings.updated({"adjacency_cache": False}), seeds, k=20)]
    assert store.sent["retrieve/pool_texts"] == 1
    assert [c for c, _ in got] == [c for c, _ in statements] and len(got) > 5
    assert [s for _, s in got] == pytest.approx([s for _, s in statements], abs=1e-5)


def test_a_new_generation_reads_the_graph_again(store: GraphStore, backend_settings: Settings) -> None:
    """Built in the background at a generation's second question; an ingestion (here a written document) or a
    deletion changes the generation, and the view of the old one is never returned for the new one."""
    graphs, _ = _graph()
    write_documents(store, graphs[:2])
    settings = backend_settings.updated({"adjacency_cache": True})
    first = corpus_generation(store)
    assert shared_adjacency(store, settings, first) is None  # the first question: no build
    assert shared_adjacency(store, settings, first) is None  # the second starts it in the background
    deadline = time.monotonic() + 30
    while (view := shared_adjacency(store, settings, first)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert view is not None and "c1" not in view.index and "a1" in view.index
    assert shared_adjacency(store, settings, first) is view  # kept while the generation holds

    write_documents(store, graphs[2:])  # document C: a new generation
    second = corpus_generation(store)
    assert second != first
    assert shared_adjacency(store, settings, second) is None  # not the old view
    rebuilt = shared_adjacency(store, settings, second, wait=True)
    assert rebuilt is not None and "c1" in rebuilt.index

    store.delete_document("doc:C")
    third = corpus_generation(store)
    assert third != second and shared_adjacency(store, settings, third) is None
    assert "c1" not in (shared_adjacency(store, settings, third, wait=True) or rebuilt).index
    assert shared_adjacency(store, settings.updated({"adjacency_cache": False}), third) is None
    assert store in adjacency_cache._SHARED  # kept per store object


def test_a_run_started_in_the_same_second_is_a_new_generation(store: GraphStore) -> None:
    """Runs' start times have whole seconds: an update run that starts in the second of the run before it, with
    the same document count and the older run's id sorting after its own, still changes the generation (its
    run count), so no cached index or adjacency of the older state is served."""

    def run(run_id: str) -> None:
        store.run(
            "ingest/start_run", {"id": run_id, "started_at": "2026-11-29T10:00:00+00:00", "paths": [], "ttl_ms": None}
        )
        store.run(
            "ingest/finish_run",
            {
                "id": run_id,
                "finished_at": "2026-11-29T10:00:00+00:00",
                "status": "completed",
                "added": 0,
                "updated": 1,
                "unchanged": 0,
                "deleted": 0,
                "failed": 0,
                "errors": [],
                "chunks": 0,
                "seconds": 0.0,
            },
        )

    run("run:b")
    before = corpus_generation(store)
    run("run:a")  # the same second; 'run:a' sorts before 'run:b'
    assert corpus_generation(store) != before


def test_a_failed_build_is_not_repeated_within_its_generation(
    store: GraphStore, backend_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that fails (the store went away mid-read) is logged; the statements answer, and no question of
    that generation starts another build; the next generation tries again."""
    write_documents(store, _graph()[0][:1])
    settings = backend_settings.updated({"adjacency_cache": True})
    builds: list[int] = []
    real = Adjacency.__init__

    def failing(self: Adjacency, s: GraphStore) -> None:
        builds.append(1)
        raise RuntimeError("the store went away")

    monkeypatch.setattr(Adjacency, "__init__", failing)
    generation = corpus_generation(store)
    assert shared_adjacency(store, settings, generation, wait=True) is None
    for _ in range(3):
        assert shared_adjacency(store, settings, generation) is None
    assert len(builds) == 1
    monkeypatch.setattr(Adjacency, "__init__", real)
    write_documents(store, _graph()[0][1:2])
    view = shared_adjacency(store, settings, corpus_generation(store), wait=True)
    assert view is not None and "b1" in view.index


def test_pages_read_every_row_once(store: GraphStore) -> None:
    """GraphStore.run_pages (the adjacency's and BM25's reads): pages smaller than the graph, and one exactly as
    large as it, give every chunk once, in id order; so does an adjacency built from pages of 2."""
    graphs, _ = _graph()
    write_documents(store, graphs)
    ids = sorted(c.id for g in graphs for c in g.chunks)
    for size in (1, 2, 3, 7, 100):
        assert [r["id"] for r in store.run_pages("retrieve/adjacency_chunks", size)] == ids
    adjacency.PAGE, page = 2, adjacency.PAGE
    try:
        assert Adjacency(store).ids == ids
    finally:
        adjacency.PAGE = page


def test_closing_the_store_stops_a_build_in_the_background(
    backend_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A knowledge base closed while its adjacency is being built (``kbgraph serve`` closing an idle one, a test's
    teardown): ``close`` waits for the build, which stops at its next row, instead of cutting its connection
    mid-reply (the Neo4j driver's close raised BufferError from under it). Nothing is kept of the stopped build."""
    from kbgraph.store import open_store

    store = open_store(backend_settings)
    store.clear()
    store.ensure_schema()
    write_documents(store, _graph()[0])
    settings = backend_settings.updated({"adjacency_cache": True})
    read: list[str] = []
    real = type(store).run_pages

    def slow(self: GraphStore, name: str, size: int) -> Any:
        for row in real(self, name, size):
            read.append(row["id"])
            time.sleep(0.3)
            yield row

    monkeypatch.setattr(type(store), "run_pages", slow)
    generation = corpus_generation(store)
    assert shared_adjacency(store, settings, generation) is None
    assert shared_adjacency(store, settings, generation) is None  # the build starts in the background
    deadline = time.monotonic() + 10
    while not read and time.monotonic() < deadline:
        time.sleep(0.02)
    assert read, "the build is under way"
    started = time.monotonic()
    store.close()  # must not raise, and returns once the build has stopped
    entry = adjacency_cache._SHARED[store]
    assert not entry.building and entry.view is None and entry.failed
    assert len(read) < 7 and time.monotonic() - started < 5  # stopped at its next row, not after all 7 chunks
    assert shared_adjacency(store, settings, generation) is None  # a closed store is not read again


def test_one_question_looks_the_adjacency_up_once(store: GraphStore, backend_settings: Settings) -> None:
    """A question counts once towards the build (score_terms gets the view propagate looked up), so a
    one-question process (``kbgraph ask``) starts no build; the second question does."""
    write_documents(store, _graph()[0])
    settings = backend_settings.updated({**WEIGHTS, **OTHER, "ranker": "weights", "adjacency_cache": True})
    seeds = SEEDS.model_copy(update={"generation": corpus_generation(store)})
    propagate(store, settings, seeds, k=5)
    entry = adjacency_cache._SHARED[store]
    assert entry.asked == 1 and not entry.building and entry.view is None
    propagate(store, settings, seeds, k=5)
    assert entry.asked == 2 and (entry.building or entry.view is not None)


@pytest.mark.parametrize("documents", [["doc:A", "doc:C"], ["doc:B"], []])
def test_rows_equal_the_statements_in_a_document_scope(store: GraphStore, documents: list[str]) -> None:
    """In a document scope (``$documents``: a filter's documents, kbgraph.store.scope) the adjacency gives the rows
    the statements give, every row's chunk is of the scope's documents, and an entity's degree counts only the
    scope's chunks (the bound keeps an entity that the whole graph would drop)."""
    _plant(store)
    view = Adjacency(store)
    documents_of = {cid: view.document[i] for cid, i in view.index.items()}
    flags: Row = {
        "with_titles": True,
        "with_similarity": True,
        "embedding": store.check_vector(QUESTION_VECTOR),
        "documents": documents,
    }
    for bound in (5, 3, 2):
        for case in LAYER_CASES:
            params = {**case, **flags, "max_degree": bound, "tag_max_degree": bound}
            expected = _canonical(store, store.run("retrieve/layer_candidates", params))
            assert _canonical(store, view.layer_rows(params)) == expected
            assert {documents_of[r["chunk_id"]] for r in view.layer_rows(params)} <= set(documents)
        for case in HOP_CASES:
            params = {**case, **flags, "max_degree": bound, **SPECIFIC}
            expected = _canonical(store, store.run("retrieve/hop_neighbours", params))
            assert _canonical(store, view.hop_rows(params)) == expected
            assert {documents_of[r["chunk_id"]] for r in view.hop_rows(params)} <= set(documents)
    if documents == ["doc:A", "doc:C"]:  # rows outside the scope exist without it, and none within it
        wide = view.layer_rows({**LAYER_CASES[0], **flags, "documents": None, "max_degree": 5, "tag_max_degree": 5})
        assert {documents_of[r["chunk_id"]] for r in wide} - set(documents)


def test_the_scoped_chunk_seeds_equal_the_statement(store: GraphStore) -> None:
    """A filtered dense question's exact Chunk seeds from the adjacency (``top_chunks``) are those of
    ``retrieve/seed_vectors_within``: the same chunks in the same order, the same cosines."""
    from kbgraph.store.scope import DocumentScope, within

    _plant(store)
    view = Adjacency(store)
    chunks = frozenset(cid for cid, i in view.index.items() if view.document[i] in ("doc:A", "doc:C"))
    with within(DocumentScope(frozenset({"doc:A", "doc:C"}), chunks, len(view))):
        expected = store.seed_vectors(QUESTION_VECTOR, 3, exact=True, layers=("Chunk",))["Chunk"]
    got = view.top_chunks(QUESTION_VECTOR, chunks, 3)
    assert [h.id for h in got] == [h.id for h in expected] and len(got) == 3
    assert [round(h.score, 5) for h in got] == [round(h.score, 5) for h in expected]
