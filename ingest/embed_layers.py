"""Stage 4 of ingestion: embed the layers of a group of document graphs whose vectors are switched on
(PIKE-RAG §5.3.1, §4.1: each layer of the knowledge base is searchable by vector; setting ``vector_layers``).

The texts embedded: a Document by its title and title alternatives (``DocumentRecord.label``,
kbgraph.ingest.titles), a Section by ``"title > path"``, a Chunk by
``kbgraph.text.index_text`` (the same text the BM25 baseline indexes), an atomic question by its text, a
triple by ``"subject predicate object"``, an entity by its name. One embedder call per layer for the whole
group. A layer that is off keeps its nodes, edges and full-text index; its records keep ``embedding=None``
and are written without a vector (its vectors did not earn their embedding time,
benchmarks/layer_ablation.py). The Chunk layer is always embedded. With ``late_chunking``
the sentence tags come from the chunks' own forward pass (``kbgraph.ingest.embed_late``). The layers of setting
``static_layers`` are embedded by the static model (``kbgraph.embed.static_model``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import cast

import numpy as np

from kbgraph.embed.late import SpanEmbedder, can_embed_spans
from kbgraph.ingest.embed_late import embed_chunks_late
from kbgraph.models import (
    AtomicQuestionRecord,
    ChunkRecord,
    DocumentGraph,
    DocumentRecord,
    EntityRecord,
    SectionRecord,
    TripleRecord,
)
from kbgraph.text import index_text
from kbgraph.embed.base import Embedder


#: A record of a vector layer (it has an ``id`` and an ``embedding``).
LayerRecord = DocumentRecord | SectionRecord | ChunkRecord | AtomicQuestionRecord | TripleRecord | EntityRecord


def layer_texts(graphs: list[DocumentGraph]) -> list[tuple[str, Sequence[LayerRecord], list[str]]]:
    """``(label, records, texts)`` of every vector layer of ``graphs``, one text per record, in the order
    Document, Section, Chunk, AtomicQuestion, Triple, Entity. An entity shared by documents of the group is
    listed once (its first record)."""
    docs = [g.document for g in graphs]
    secs = [s for g in graphs for s in g.sections]
    chunks = [c for g in graphs for c in g.chunks]
    qs = [q for g in graphs for q in g.questions]
    ts = [t for g in graphs for t in g.triples]
    ents: dict[str, EntityRecord] = {}
    for g in graphs:
        for e in g.entities:
            ents.setdefault(e.id, e)
    return [
        ("Document", docs, [d.label for d in docs]),
        ("Section", secs, [f"{g.document.title} > {s.path}" for g in graphs for s in g.sections]),
        (
            "Chunk",
            chunks,
            [index_text(g.document.title, c.section_path, c.kind, c.text, c.summary) for g in graphs for c in g.chunks],
        ),
        ("AtomicQuestion", qs, [q.text for q in qs]),
        ("Triple", ts, [t.text for t in ts]),
        ("Entity", list(ents.values()), [e.name for e in ents.values()]),
    ]


def embed_distinct(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """``embedder.embed(texts)`` with each distinct text sent once: float32 (len(texts), dimension), row i the
    vector of ``texts[i]``. The same document in two formats, or a heading repeated across sections, costs one
    forward pass per text (docs/benchmarks.md#the-sample-documents)."""
    distinct = list(dict.fromkeys(texts))
    if len(distinct) == len(texts):
        return np.asarray(embedder.embed(list(texts)), dtype=np.float32)
    vectors = np.asarray(embedder.embed(distinct), dtype=np.float32)
    row = {t: i for i, t in enumerate(distinct)}
    return vectors[[row[t] for t in texts]]


def embed_layers(
    graphs: list[DocumentGraph],
    embedder: Embedder,
    layers: Collection[str] | None = None,
    *,
    late_chunking: bool = False,
    static: Embedder | None = None,
    static_layers: Collection[str] = (),
    entity_types_without_vectors: Collection[str] = (),
) -> int:
    """Set ``embedding`` (a list of floats, the embedder's dimension) on every record of ``graphs`` whose
    layer is in ``layers`` (labels: Document, Section, AtomicQuestion, Triple, Entity; None = all; Chunk is
    always embedded); the other records keep ``embedding=None``. ``embedder``: anything with ``embed(texts)``
    returning one vector (numpy array) per text. An entity shared by documents of the group is embedded once
    and every copy carries that vector. ``late_chunking``: with an embedder that offers
    ``embed_spans`` and AtomicQuestion on, sentence tags are pooled from their chunk's pass
    (``kbgraph.ingest.embed_late``) and only the other questions are embedded. The layers in ``static_layers``
    (not Chunk) are embedded by ``static`` (an embedder, the static model) instead. Entities whose type is in
    ``entity_types_without_vectors`` (upper case) keep ``embedding=None``. Returns the number of texts embedded
    (a pooled tag counts as one)."""
    done = 0
    late = late_chunking and can_embed_spans(embedder) and (layers is None or "AtomicQuestion" in layers)
    pooled: set[str] = set()
    for label, records, texts in layer_texts(graphs):
        if not records or (layers is not None and label != "Chunk" and label not in layers):
            continue
        if label == "Entity" and entity_types_without_vectors:
            keep = [
                i
                for i, r in enumerate(records)
                if cast(EntityRecord, r).type.upper() not in entity_types_without_vectors
            ]
            records, texts = [records[i] for i in keep], [texts[i] for i in keep]
        done += len(texts)
        if late and label == "Chunk":
            chunks = cast("list[ChunkRecord]", records)  # the Chunk layer's records (layer_texts)
            pooled = embed_chunks_late(
                chunks, texts, [q for g in graphs for q in g.questions], cast(SpanEmbedder, embedder)
            )  # late: can_embed_spans(embedder)
            continue
        if pooled and label == "AtomicQuestion":
            keep = [i for i, r in enumerate(records) if r.id not in pooled]  # the rest: embedded as before
            records, texts = [records[i] for i in keep], [texts[i] for i in keep]
        if not records:
            continue
        source = embedder
        if label in static_layers and label != "Chunk":
            assert static is not None  # given with static_layers (kbgraph.ingest.compute)
            source = static
        vectors = embed_distinct(source, texts)
        for rec, vec in zip(records, vectors, strict=True):
            rec.embedding = vec.tolist()
    by_id = {e.id: e.embedding for g in graphs for e in g.entities if e.embedding is not None}
    for g in graphs:  # entities shared between documents of the group carry the same vector
        for e in g.entities:
            e.embedding = by_id.get(e.id)
    return done


__all__ = ["embed_distinct", "embed_layers", "layer_texts"]
