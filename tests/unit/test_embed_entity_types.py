"""kbgraph.ingest.embed_layers with setting ``entity_types_without_vectors``: entities of those types keep no
vector and are not sent to the embedder; the others, and every other layer, are embedded as before."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kbgraph.ingest.embed_layers import embed_layers
from kbgraph.models import ChunkRecord, DocumentGraph, DocumentRecord, EntityRecord
from kbgraph.settings import Settings


class Recorder:
    """An Embedder (the protocol) that records the texts it is given; every vector is ones."""

    dimension = 3
    model_name = "recorder"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += list(texts)
        return np.ones((len(texts), 3), dtype="float32")


def _graph() -> DocumentGraph:
    doc = DocumentRecord(id="d", uri="file:///x#1", title="T", mime="text/plain", sha256="s")
    chunk = ChunkRecord(
        id="c", document_id="d", parent_id="d", text="Grace Hopper wrote a compiler in 1952.", order=0, section_path="T"
    )
    ents = [
        EntityRecord(id="p", name="Grace Hopper", type="PERSON"),
        EntityRecord(id="k", name="compiler", type="CONCEPT"),
        EntityRecord(id="y", name="1952", type="DATE"),
    ]
    return DocumentGraph(document=doc, chunks=[chunk], entities=ents)


def test_dates_get_no_vector_by_default() -> None:
    skip = frozenset(Settings().embedding.entity_types_without_vectors)
    assert skip == {"DATE"}
    g, emb = _graph(), Recorder()
    assert embed_layers([g], emb, ["Entity"], entity_types_without_vectors=skip) == 3  # chunk, person, concept
    assert emb.texts[-2:] == ["Grace Hopper", "compiler"] and "1952" not in emb.texts
    assert {e.id: e.embedding is not None for e in g.entities} == {"p": True, "k": True, "y": False}


def test_concepts_and_dates_both_left_out() -> None:
    g, emb = _graph(), Recorder()
    assert embed_layers([g], emb, ["Entity"], entity_types_without_vectors=frozenset({"CONCEPT", "DATE"})) == 2
    assert emb.texts[-1] == "Grace Hopper" and "compiler" not in emb.texts
    assert {e.id: e.embedding is not None for e in g.entities} == {"p": True, "k": False, "y": False}


def test_an_empty_list_embeds_every_entity() -> None:
    g, emb = _graph(), Recorder()
    assert embed_layers([g], emb, ["Entity"], entity_types_without_vectors=frozenset()) == 4
    assert all(e.embedding == [1.0, 1.0, 1.0] for e in g.entities)


def test_the_setting_reads_a_comma_separated_list_in_any_case() -> None:
    assert Settings(entity_types_without_vectors="concept, Date,,DATE").embedding.entity_types_without_vectors == [
        "CONCEPT",
        "DATE",
    ]
    assert Settings(entity_types_without_vectors="").embedding.entity_types_without_vectors == []
