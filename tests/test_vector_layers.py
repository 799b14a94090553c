"""Setting ``vector_layers`` (issue 15, direction 1): a layer that is off is ingested without vectors (nodes,
edges and full-text kept) and is not vector-seeded at query time; a knowledge base built with a layer off
retrieves exactly what a knowledge base built with every vector retrieves once that layer is switched off
(its vectors then stay in the store unused). Real stores, real embeddings, the offline pipeline, on 16
MuSiQue passages."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kbgraph.embed.static_model import get_static_embedder
from kbgraph.errors import SchemaMismatch
from kbgraph.ingest.embed_layers import embed_layers
from kbgraph.kb import KnowledgeBase
from kbgraph.models import ChunkRecord, DocumentGraph, DocumentRecord, EntityRecord
from kbgraph.query.propagation.propagate import propagate
from kbgraph.query.propagation.seeding import seed_layers
from kbgraph.settings import VECTOR_LAYER_CHOICES, Settings
from kbgraph.settings_groups import EmbeddingSettings
from kbgraph.store import backend_name

from tests.musique_sample import musique_sample

if TYPE_CHECKING:
    import numpy as np

OFF = ["Entity", "Triple", "Section", "Document"]  # AtomicQuestion stays on: Algorithm 1 retrieves it by vector
ON = ["AtomicQuestion"]
STATIC_DIMENSION = 128  # setting static_dimension's test value (a second distillation unless it is the default)


@pytest.fixture(scope="module")
def corpus(examples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """16 passages (the gold passages of the first questions, then others) and those questions."""
    return musique_sample(examples_dir, tmp_path_factory.mktemp("vlayers"), 16, 4)


def _fresh(settings: Settings, corpus: tuple[Path, list[str]], layers: list[str], suffix: str = "") -> KnowledgeBase:
    """A knowledge base of ``corpus`` built with ``layers`` embedded (on FalkorDB a new graph per ``suffix``)."""
    kb = KnowledgeBase(settings=settings.updated({"vector_layers": layers, "name": settings.name + suffix}))
    kb.reset()
    report = kb.ingest([corpus[0]], progress=False)
    assert report.added == 16 and report.failed == 0
    return kb


def _top(kb: KnowledgeBase, settings: Settings, questions: list[str]) -> list[list[tuple[str, float]]]:
    out = []
    for q, vec in zip(questions, kb.embedder.embed(questions), strict=True):
        chunks = propagate(kb.store, settings, seed_layers(kb.store, settings, q, vec.tolist()), k=10)
        out.append([(c.id, round(c.score, 6)) for c in chunks])
    return out


def test_setting_parses_csv_and_rejects_unknown_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBGRAPH_VECTOR_LAYERS", "Chunk, Entity,Entity")
    s = Settings()
    assert s.embedding.vector_layers == ["Entity"]  # Chunk is always on, not a choice
    assert s.embedding.vector_layers_off == set(VECTOR_LAYER_CHOICES) - {"Entity"}
    monkeypatch.setenv("KBGRAPH_VECTOR_LAYERS", "")
    assert Settings().embedding.vector_layers_off == set(VECTOR_LAYER_CHOICES)
    monkeypatch.setenv("KBGRAPH_VECTOR_LAYERS", "Entity,Tripel")
    with pytest.raises(ValueError, match="unknown vector layer 'Tripel'"):
        Settings()


def test_embed_layers_skips_the_layers_that_are_off() -> None:
    class CountingEmbedder:  # an Embedder (the protocol): dimension and model_name too, though not read here
        texts: list[str] = []
        dimension = 3
        model_name = "counting"

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            import numpy as np

            self.texts += list(texts)
            return np.ones((len(texts), 3), dtype="float32")

    doc = DocumentRecord(id="d", uri="file:///x#1", title="T", mime="text/plain", sha256="s")
    chunk = ChunkRecord(id="c", document_id="d", parent_id="d", text="Alice met Bob.", order=0, section_path="T")
    ents = [EntityRecord(id="e", name="Alice", type="PERSON")]
    g = DocumentGraph(document=doc, chunks=[chunk], entities=ents)
    emb = CountingEmbedder()
    assert embed_layers([g], emb, ["Document"]) == 2
    assert len(emb.texts) == 2 and emb.texts[0] == "T"  # the document's title, then the chunk's text
    assert g.document.embedding is not None and g.chunks[0].embedding is not None
    assert g.entities[0].embedding is None
    assert embed_layers([g], emb, None) == 3 and g.entities[0].embedding == [1.0, 1.0, 1.0]


def test_ingest_with_layers_off_keeps_nodes_edges_and_fulltext(
    backend_settings: Settings, corpus: tuple[Path, list[str]]
) -> None:
    kb = _fresh(backend_settings, corpus, ON)
    try:
        stats = kb.stats()
        for label in ("Document", "Chunk", "AtomicQuestion", "Triple", "Entity"):
            assert stats.nodes.get(label, 0) > 0, label
        for rel in ("MENTIONS", "EXTRACTED_FROM", "HAS_QUESTION"):
            assert stats.relationships.get(rel, 0) > 0, rel
        qvec = kb.embedder.embed([corpus[1][0]])[0].tolist()
        for label in OFF:  # no vector written: the layer's vector index is empty
            assert kb.store.vector_search(label, qvec, k=5) == [], label
        for label in ("Chunk", "AtomicQuestion"):
            assert kb.store.vector_search(label, qvec, k=5), label
        name = kb.store.vector_search("Chunk", qvec, k=1)[0].properties.get("text", "").split()[0]
        assert kb.store.fulltext_search("Chunk", name, 5)
        seeds = seed_layers(kb.store, kb.settings, corpus[1][0], qvec)
        assert seeds.layers.get("EntityText")  # Entity.name full-text still seeds
    finally:
        kb.close()


def test_a_layer_switched_off_retrieves_as_if_built_without_its_vectors(
    backend_settings: Settings, corpus: tuple[Path, list[str]]
) -> None:
    """Compared in full on FalkorDB (each build a new graph). A Neo4j Community server has one database: the
    second build follows a reset whose deleted documents still weigh in Lucene's term statistics, so there the
    comparison leaves the full-text seeds out (the setting does not touch them)."""
    questions = corpus[1]
    if backend_name(backend_settings) == "neo4j":
        backend_settings = backend_settings.updated({"weight_fulltext": 0.0})
    full = _fresh(backend_settings, corpus, list(VECTOR_LAYER_CHOICES))
    try:
        off = full.settings.updated({"vector_layers": ON})
        qvec = full.embedder.embed([questions[0]])[0].tolist()
        assert full.store.vector_search("Entity", qvec, k=5)  # the vectors are in the store ...
        all_on = seed_layers(full.store, full.settings, questions[0], qvec)
        assert all(all_on.layers.get(label) for label in OFF if label != "Section"), all_on.layers.keys()
        seeds = seed_layers(full.store, off, questions[0], qvec)
        assert not any(label in seeds.layers for label in OFF)  # ... and unused
        assert not seed_layers(full.store, off, questions[0], qvec, layers=["Entity"]).layers
        switched = _top(full, off, questions)
        everything = _top(full, full.settings, questions)
    finally:
        full.close()
    assert switched != everything  # the switch changes the ranking on this corpus
    built = _fresh(backend_settings, corpus, ON, "b")
    try:
        assert _top(built, built.settings, questions) == switched
    finally:
        built.close()


def test_date_entities_get_no_vector_and_are_found_by_name(
    backend_settings: Settings, corpus: tuple[Path, list[str]]
) -> None:
    """Setting ``entity_types_without_vectors`` (default DATE) through a real ingestion: the Entity vector index
    holds no date, while the dates are Entity nodes found by their names; with CONCEPT added, no concept either."""
    kb = _fresh(
        backend_settings.updated({"entity_types_without_vectors": ["CONCEPT", "DATE"]}), corpus, ["Entity"], "t"
    )
    try:
        assert EmbeddingSettings().entity_types_without_vectors == ["DATE"]  # the default
        qvec = kb.embedder.embed([corpus[1][0]])[0].tolist()
        total = kb.stats().nodes["Entity"]
        embedded = kb.store.vector_search("Entity", qvec, k=total)
        types = {h.properties["type"] for h in embedded}
        assert embedded and not types & {"CONCEPT", "DATE"} and "PERSON" in types, types
        words = " ".join(corpus[1])  # the questions' words: full text on Entity.name
        by_name = kb.store.fulltext_search("Entity", words, 200)
        unembedded = [h for h in by_name if h.properties["type"] in ("CONCEPT", "DATE")]
        assert unembedded and not {h.id for h in unembedded} & {h.id for h in embedded}
        assert len(embedded) < total
    finally:
        kb.close()


def test_static_layer_index_has_the_static_dimension(
    backend_settings: Settings, corpus: tuple[Path, list[str]]
) -> None:
    """Setting ``static_dimension`` through a real ingestion: the Entity vector index (a static layer) is created at
    the static model's PCA dimension and holds the static model's vectors, the Chunk index keeps the model's; an
    entity's own name finds it first; the question's static vector seeds the Entity layer; opening the knowledge
    base with another static dimension is refused, naming the one it was built with."""
    dim = STATIC_DIMENSION
    settings = backend_settings.updated({"static_dimension": dim})
    kb = _fresh(settings, corpus, ["AtomicQuestion", "Entity"], "sd")
    try:
        assert kb.store._list_vector_dimensions()["Entity"] == dim
        assert kb.store._list_vector_dimensions()["Chunk"] == kb.settings.embedding.embedding_dimension
        static = get_static_embedder(kb.settings)
        assert static.dimension == dim and static.model_name.endswith(f"+static{dim}")
        by_name = kb.store.fulltext_search("Entity", " ".join(corpus[1]), 200)
        entity = next(
            h for h in by_name if h.properties["type"] not in kb.settings.embedding.entity_types_without_vectors
        )
        name = entity.properties["name"]
        hits = kb.store.vector_search("Entity", static.embed([name])[0], k=5)
        assert hits and hits[0].properties["name"] == name and hits[0].score > 0.95, (
            name,
            hits[:2],
        )  # Neo4j quantizes: 0.986
        seeds = seed_layers(kb.store, kb.settings, corpus[1][0], kb.embedder.embed([corpus[1][0]])[0].tolist())
        assert seeds.layers["Entity"] and seeds.layers["AtomicQuestion"]
    finally:
        kb.close()
    other = KnowledgeBase(settings=settings.updated({"static_dimension": None, "name": kb.settings.name}))
    try:
        with pytest.raises(
            SchemaMismatch, match=f"Entity vector index has dimension {dim}.*KBGRAPH_STATIC_DIMENSION={dim}"
        ):
            other.store  # noqa: B018 - opening the store checks the schema
        other.reset()  # what the message names: the index is re-created at the settings' dimension (Neo4j: the
        assert (
            other.store._list_vector_dimensions()["Entity"] == other.settings.embedding.embedding_dimension
        )  # suite's database, for the next test)
        assert other.stats().nodes.get("Entity", 0) == 0
    finally:
        other.close()
