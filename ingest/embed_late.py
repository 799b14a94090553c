"""Late chunking at ingestion (setting ``late_chunking``): the Chunk layer's single forward
pass also yields the vectors of the chunk's sentence-level atomic tags.

Offline, each sentence of a chunk is an atomic tag (``AtomicQuestion`` of kind 'sentence', paper 003 Table 13;
``kbgraph.ingest.distill.tags``). Embedding them in a second pass cost ~72 s of a 2Wiki ingestion
(benchmarks/HISTORY.md, "Which layer vectors earn their cost"); with late chunking (Günther et al. 2024, arXiv
2409.04701 §3; ``kbgraph.embed.late``) a tag's vector is the mean of its tokens' states in its chunk's pass, so it
carries the chunk's context.

A tag is pooled when it is found in the chunk's embedded text (``kbgraph.text.index_text``), searched in the
chunk's body (``chunk_body``): first as the exact text, then with any whitespace between its words (the tag's
whitespace was collapsed). Everything else (LLM-written questions, table rows, a tag not found or cut by the
model's ``max_seq_length``) is left to the caller to embed as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from kbgraph.models import AtomicQuestionRecord, ChunkRecord
from kbgraph.text import chunk_body
from kbgraph.embed.late import SpanEmbedder

__all__ = ["embed_chunks_late", "embed_spans_distinct", "find_span"]


def find_span(text: str, sentence: str, start: int = 0) -> tuple[int, int] | None:
    """The character span ``(start, end)`` of ``sentence`` in ``text`` at or after ``start``: the exact text,
    else its words separated by any whitespace; None if absent or blank."""
    if not sentence.strip():
        return None
    at = text.find(sentence, start)
    if at >= 0:
        return at, at + len(sentence)
    found = re.compile(r"\s+".join(map(re.escape, sentence.split()))).search(text, start)
    return found.span() if found else None


def embed_spans_distinct(
    embedder: SpanEmbedder, texts: list[str], spans: list[list[tuple[int, int]]]
) -> tuple[np.ndarray, list[list[np.ndarray | None]]]:
    """``embedder.embed_spans(texts, spans)`` with each distinct (text, spans) pair sent once; the same shapes
    and rows, a repeated pair's rows being the first's (its span vectors shared, not copied)."""
    keys = [(t, tuple(sp)) for t, sp in zip(texts, spans, strict=True)]
    distinct = list(dict.fromkeys(keys))
    if len(distinct) == len(keys):
        return embedder.embed_spans(texts, spans)
    vectors, pooled = embedder.embed_spans([t for t, _ in distinct], [list(sp) for _, sp in distinct])
    row = {k: i for i, k in enumerate(distinct)}
    return vectors[[row[k] for k in keys]], [pooled[row[k]] for k in keys]


def embed_chunks_late(
    chunks: Sequence[ChunkRecord],
    texts: Sequence[str],
    questions: Sequence[AtomicQuestionRecord],
    embedder: SpanEmbedder,
) -> set[str]:
    """Embed ``chunks`` (their embedded ``texts``, one per chunk) with ``embedder.embed_spans`` and set
    ``embedding`` (a list of floats) on every chunk and on every question of kind 'sentence' of those chunks
    that is found in its chunk's text and gets a pooled vector. Returns the ids of the questions given a
    vector; the others keep theirs (normally None) for the caller to embed."""
    by_chunk: dict[str, list[AtomicQuestionRecord]] = {}
    for q in questions:
        if q.kind == "sentence":
            by_chunk.setdefault(q.chunk_id, []).append(q)
    spans: list[list[tuple[int, int]]] = []
    owners: list[list[AtomicQuestionRecord]] = []
    for chunk, text in zip(chunks, texts, strict=True):
        body = chunk_body(chunk.kind, chunk.text, chunk.summary)
        start = len(text) - len(body) if text.endswith(body) else 0  # not in the heading
        pairs = [(q, find_span(text, q.text, start)) for q in by_chunk.get(chunk.id, [])]
        found = [(q, sp) for q, sp in pairs if sp is not None]
        spans.append([sp for _, sp in found])
        owners.append([q for q, _ in found])
    vectors, pooled = embed_spans_distinct(embedder, list(texts), spans)
    done: set[str] = set()
    for chunk, vec, qs, vecs in zip(chunks, vectors, owners, pooled, strict=True):
        chunk.embedding = vec.tolist()
        for q, v in zip(qs, vecs, strict=True):
            if v is not None:
                q.embedding = v.tolist()
                done.add(q.id)
    return done
