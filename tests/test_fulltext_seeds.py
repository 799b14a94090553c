"""The Chunk full-text seeds (the ``FullText`` term, docs/scoring.md): while BM25 is on (``ranker_bm25_k`` > 0, any
ranker) they are BM25's top ``fulltext_k`` (kbgraph.query.bm25's in-memory index, the one the learned ranker's pool
searches) and the store's Chunk.text full-text statement is not sent; with ``ranker_bm25_k=0`` they are the store's
full-text hits. The Entity.name full-text seeds (the ``EntityText`` term) come from the store's full-text index
(setting ``entity_fulltext`` 'store', the default) or from kbgraph.query.bm25's index of the entities' names
('bm25').
Both stores, a planted corpus."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kbgraph.ingest.write import write_documents
from kbgraph.models import ChunkRecord, DocumentGraph, DocumentRecord, EntityRecord
from kbgraph.query.bm25 import ENTITY_NAMES, shared_index
from kbgraph.query.propagation.seeding import seed_layers
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore

QUESTION = "Which river flows through the old mill town of Brackenford?"
TEXTS = [
    "Brackenford is an old mill town on the river Wend.",
    "The river Wend flows north through three counties.",
    "Mill towns grew along rivers in the nineteenth century.",
    "Brackenford Brackenford Brackenford: the town's name in three spellings.",
    "The old town hall of Ashby was built in 1820.",
    "A recipe for bread with flour from the mill.",
    "Nothing here shares a word with the question at all.",
]


def _vec(seed: int) -> list[float]:
    v = np.random.default_rng(seed).normal(size=384)
    return (v / np.linalg.norm(v)).tolist()  # type: ignore[no-any-return]


def _graph() -> DocumentGraph:
    doc = DocumentRecord(
        id="doc:R", uri="file:///r.txt", title="Rivers", mime="text/plain", sha256="r", embedding=_vec(1)
    )
    chunks = [
        ChunkRecord(id=f"r{i}", document_id=doc.id, parent_id=doc.id, text=t, order=i, embedding=_vec(10 + i))
        for i, t in enumerate(TEXTS)
    ]
    return DocumentGraph(document=doc, chunks=chunks)


def test_chunk_fulltext_seeds_come_from_bm25_while_it_is_on(store: GraphStore, backend_settings: Settings) -> None:
    write_documents(store, [_graph()])
    qvec = _vec(99)
    learned = backend_settings.updated({"ranker": "learned", "ranker_bm25_k": 3, "fulltext_k": 5})
    store.sent.clear()
    seeds = seed_layers(store, learned, QUESTION, qvec)
    assert store.sent["retrieve/seed_fulltext_chunk"] == 0 and store.sent["retrieve/seed_fulltext_entity"] == 1
    top = shared_index(store, learned).search(QUESTION, 5)
    assert len(top) == 5 and len(seeds.bm25) == 3 and seeds.bm25 == top[:3]  # the pool's BM25 keeps its own k
    best = top[0][1]
    assert seeds.layers["FullText"] == {cid: (score / best, "") for cid, score in top}

    weights = learned.updated({"ranker": "weights"})  # the weighted sum: the same FullText seeds, no BM25 pool
    store.sent.clear()
    summed = seed_layers(store, weights, QUESTION, qvec)
    assert store.sent["retrieve/seed_fulltext_chunk"] == 0 and not summed.bm25
    assert summed.layers["FullText"] == seeds.layers["FullText"]

    off = learned.updated({"ranker_bm25_k": 0})  # no BM25: the store's full-text index
    store.sent.clear()
    plain = seed_layers(store, off, QUESTION, qvec)
    assert store.sent["retrieve/seed_fulltext_chunk"] == 1 and not plain.bm25
    hits = store.seed_fulltext(QUESTION, 5, ("Chunk",))["Chunk.text"]
    best = max(h.score for h in hits)
    assert {cid: s for cid, (s, _) in plain.layers["FullText"].items()} == pytest.approx(
        {h.id: h.score / best for h in hits}
    )
    assert "r6" not in plain.layers["FullText"] and "r6" not in seeds.layers["FullText"]  # no shared word


NAMES_QUESTION = "Where is the Brackenford mill?"


def _named(doc_id: str, entities: list[tuple[str, str]]) -> DocumentGraph:
    doc = DocumentRecord(
        id=doc_id, uri=f"file:///{doc_id}.txt", title=doc_id, mime="text/plain", sha256=doc_id, embedding=_vec(2)
    )
    chunk = ChunkRecord(
        id=f"{doc_id}-c", document_id=doc.id, parent_id=doc.id, text="Mills.", order=0, embedding=_vec(3)
    )
    return DocumentGraph(
        document=doc,
        chunks=[chunk],
        entities=[EntityRecord(id=eid, name=name, type="ORG", embedding=_vec(4)) for eid, name in entities],
    )


def test_entity_name_seeds_come_from_memory_ties_by_id(
    store: GraphStore, backend_settings: Settings, tmp_path: Path
) -> None:
    """Twelve entities named alike for the question, written largest id first, and three that share one word or
    none: the EntityText seeds are the ``fulltext_k`` smallest ids of the tie (score 1 after normalising by the
    best), with their names, and no Entity.name statement is sent; a new document's entity with a smaller id is in
    the next question's seeds (the index follows the corpus generation); with ``entity_fulltext='store'`` the seeds
    are the store's full-text hits, one statement."""
    tie = [(f"ent:tie{i:02d}", "Brackenford Mill") for i in reversed(range(12))]
    others = [("ent:b", "Brackenford"), ("ent:m", "Mill Lane"), ("ent:z", "Ashby Town Hall")]
    write_documents(store, [_named("doc:N", tie + others)])
    qvec = _vec(98)
    # a home of its own: the session's Neo4j settings are shared, and an index saved under the same corpus generation
    # (a cleared graph, one document, no ingestion run) would be loaded from disk
    settings = backend_settings.updated({"fulltext_k": 5, "home": tmp_path, "entity_fulltext": "bm25"})
    store.sent.clear()
    seeds = seed_layers(store, settings, NAMES_QUESTION, qvec)
    assert store.sent["retrieve/seed_fulltext_entity"] == 0
    assert seeds.layers["EntityText"] == {f"ent:tie{i:02d}": (1.0, "Brackenford Mill") for i in range(5)}

    write_documents(store, [_named("doc:O", [("ent:a", "Brackenford Mill")])])
    again = seed_layers(store, settings, NAMES_QUESTION, qvec)
    assert list(again.layers["EntityText"]) == ["ent:a", *(f"ent:tie{i:02d}" for i in range(4))]
    index = shared_index(store, settings, corpus=ENTITY_NAMES)
    assert len(index) == 16 and index.search("Ashby", 3)[0][0] == "ent:z"

    store.sent.clear()
    from_store = seed_layers(store, settings.updated({"entity_fulltext": "store"}), NAMES_QUESTION, qvec)
    assert store.sent["retrieve/seed_fulltext_entity"] == 1
    hits = store.seed_fulltext(NAMES_QUESTION, 5, ("Entity",))["Entity.name"]
    assert list(from_store.layers["EntityText"]) == [h.id for h in hits]
