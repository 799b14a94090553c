"""The Chunk full-text seeds (the ``FullText`` term, docs/scoring.md): while BM25 is on (``ranker_bm25_k`` > 0, any
ranker) they are BM25's top ``fulltext_k`` (kbgraph.query.bm25's in-memory index, the one the learned ranker's pool
searches) and the store's Chunk.text full-text statement is not sent; with ``ranker_bm25_k=0`` they are the store's
full-text hits. Both stores, a planted corpus."""

from __future__ import annotations

import numpy as np
import pytest

from kbgraph.ingest.write import write_documents
from kbgraph.models import ChunkRecord, DocumentGraph, DocumentRecord
from kbgraph.query.bm25 import shared_index
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
