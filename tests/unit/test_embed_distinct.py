"""Ingestion embeds each distinct text once (``kbgraph.ingest.embed_layers.embed_distinct``,
``kbgraph.ingest.embed_late.embed_spans_distinct``): the same document in two formats sends its chunks, tags
and headings to the model once, and every copy gets the vector its text has."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kbgraph.ingest.embed_late import embed_spans_distinct
from kbgraph.ingest.embed_layers import embed_distinct, embed_layers
from kbgraph.models import AtomicQuestionRecord, ChunkRecord, DocumentGraph, DocumentRecord, SectionRecord


def _vector(text: str) -> np.ndarray:
    """A vector that depends on the text alone (so a wrong row shows)."""
    return np.array([len(text), sum(map(ord, text)) % 97, text.count(" ")], dtype=np.float32)


class SpanEmbedder:
    """An Embedder with late chunking (``embed_spans``) that records every text it is sent; a span's vector is
    the vector of the spanned characters."""

    dimension = 3
    model_name = "spans"
    can_embed_spans = True

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += list(texts)
        return np.stack([_vector(t) for t in texts]) if texts else np.zeros((0, 3), np.float32)

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[np.ndarray, list[list[np.ndarray | None]]]:
        vectors = self.embed(texts)
        return vectors, [[_vector(t[a:b]) for a, b in ss] for t, ss in zip(texts, spans, strict=True)]


def test_each_distinct_text_is_sent_once_and_every_row_is_its_texts() -> None:
    emb = SpanEmbedder()
    texts = ["alpha beta", "gamma", "alpha beta", "delta epsilon", "gamma"]
    out = embed_distinct(emb, texts)
    assert emb.texts == ["alpha beta", "gamma", "delta epsilon"]
    assert np.array_equal(out, np.stack([_vector(t) for t in texts]))


def test_each_distinct_text_and_spans_is_sent_once() -> None:
    emb = SpanEmbedder()
    texts = ["one two. three four.", "five six.", "one two. three four.", "one two. three four."]
    spans = [[(0, 8), (9, 20)], [(0, 9)], [(0, 8), (9, 20)], [(0, 8)]]  # the last: the same text, other spans
    vectors, pooled = embed_spans_distinct(emb, texts, spans)
    assert emb.texts == ["one two. three four.", "five six.", "one two. three four."]
    assert np.array_equal(vectors, np.stack([_vector(t) for t in texts]))
    want = [[_vector(t[a:b]) for a, b in ss] for t, ss in zip(texts, spans, strict=True)]
    assert [[v.tolist() for v in row if v is not None] for row in pooled] == [[v.tolist() for v in row] for row in want]


def _graph(doc: str, title: str) -> DocumentGraph:
    d = DocumentRecord(id=f"doc:{doc}", uri=f"file:///{doc}", title=title, mime="text/plain", sha256=doc)
    sec = SectionRecord(
        id=f"sec:{doc}", document_id=d.id, parent_id=d.id, title="Intro", path="Intro", level=1, order=0
    )
    text = "Grace Hopper wrote a compiler. It ran in 1952 on the UNIVAC I."
    chunk = ChunkRecord(id=f"chunk:{doc}", document_id=d.id, parent_id=sec.id, text=text, order=0, section_path="Intro")
    qs = [
        AtomicQuestionRecord(id=f"aq:{doc}:{i}", chunk_id=chunk.id, text=s, kind="sentence")
        for i, s in enumerate(["Grace Hopper wrote a compiler.", "It ran in 1952 on the UNIVAC I."])
    ]
    return DocumentGraph(document=d, sections=[sec], chunks=[chunk], questions=qs)


def test_two_copies_of_a_document_are_embedded_once_and_both_get_vectors() -> None:
    emb = SpanEmbedder()
    a, b = _graph("a", "Compilers"), _graph("b", "Compilers")  # the same document in two formats
    embed_layers([a, b], emb, ["Document", "Section", "AtomicQuestion"], late_chunking=True)
    assert sorted(emb.texts) == sorted(set(emb.texts))  # nothing sent twice
    for x, y in ((a, b), (b, a)):
        assert x.chunks[0].embedding is not None and x.chunks[0].embedding == y.chunks[0].embedding
        assert x.sections[0].embedding == y.sections[0].embedding is not None
        assert [q.embedding for q in x.questions] == [q.embedding for q in y.questions]
        assert all(q.embedding is not None for q in x.questions)
    one = SpanEmbedder()
    alone = _graph("c", "Compilers")
    embed_layers([alone], one, ["Document", "Section", "AtomicQuestion"], late_chunking=True)
    assert a.chunks[0].embedding == alone.chunks[0].embedding and sorted(one.texts) == sorted(emb.texts)
    assert [q.embedding for q in a.questions] == [q.embedding for q in alone.questions]
