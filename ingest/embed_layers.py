"""Stage 4 of ingestion: embed every layer of a group of document graphs (PIKE-RAG §5.3.1, §4.1: each layer
of the knowledge base is searchable by vector).

The texts embedded: a Document by its title, a Section by ``"title > path"``, a Chunk by
``kbgraph.text.index_text`` (the same text the BM25 baseline indexes), an atomic question by its text, a
triple by ``"subject predicate object"``, an entity by its name. One embedder call per layer for the whole
group.
"""

from __future__ import annotations

from typing import Any

from kbgraph.models import DocumentGraph
from kbgraph.text import index_text


def embed_layers(graphs: list[DocumentGraph], embedder: Any) -> int:
    """Set ``embedding`` (a list of floats, the embedder's dimension) on every record of ``graphs``: Document,
    Section, Chunk, atomic question, triple and entity. ``embedder``: anything with ``embed(texts)`` returning
    one vector (numpy array) per text. An entity shared by documents of the group is embedded once and every
    copy carries that vector. Returns the number of texts embedded."""
    layers: list[tuple[list, list[str]]] = []
    docs = [g.document for g in graphs]
    layers.append((docs, [d.title for d in docs]))
    secs = [s for g in graphs for s in g.sections]
    layers.append((secs, [f"{g.document.title} > {s.path}" for g in graphs for s in g.sections]))
    chunks = [c for g in graphs for c in g.chunks]
    ctexts = [index_text(g.document.title, c.section_path, c.kind, c.text, c.summary) for g in graphs for c in g.chunks]
    layers.append((chunks, ctexts))
    qs = [q for g in graphs for q in g.questions]
    layers.append((qs, [q.text for q in qs]))
    ts = [t for g in graphs for t in g.triples]
    layers.append((ts, [t.text for t in ts]))
    ents: dict[str, Any] = {}
    for g in graphs:
        for e in g.entities:
            ents.setdefault(e.id, e)
    layers.append((list(ents.values()), [e.name for e in ents.values()]))
    for records, texts in layers:
        if not records:
            continue
        vectors = embedder.embed(texts)
        for rec, vec in zip(records, vectors, strict=True):
            rec.embedding = vec.tolist()
    for g in graphs:  # entities shared between documents of the group carry the same vector
        for e in g.entities:
            e.embedding = ents[e.id].embedding
    return sum(len(texts) for records, texts in layers if records)


__all__ = ["embed_layers"]
