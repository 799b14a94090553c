"""Late chunking (issue 15 direction 2; Günther et al. 2024, arXiv 2409.04701): sentence tags pooled from their
chunk's own forward pass. Real all-MiniLM-L6-v2 on ONNX Runtime, real MuSiQue and 2Wiki text, real stores."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import pytest

from kbgraph.embed import make_embedder
from kbgraph.embed.base import Embedder
from kbgraph.embed.late import can_embed_spans
from kbgraph.embed.onnx_runtime import OnnxEmbedder
from kbgraph.embed.cache import CachedEmbedder
from kbgraph.ingest.embed_layers import embed_layers
from kbgraph.kb import KnowledgeBase
from kbgraph.models import AtomicQuestionRecord, ChunkRecord, DocumentGraph, DocumentRecord
from kbgraph.settings import Settings
from kbgraph.text import index_text

if TYPE_CHECKING:
    from tokenizers import Encoding

#: one batch of OnnxEmbedder._forward: (indices, token states, attention mask, encodings)
Batch = tuple[list[int], np.ndarray, np.ndarray, list["Encoding"]]


@pytest.fixture(scope="module")
def onnx(falkor_settings: Settings) -> OnnxEmbedder:
    embedder = make_embedder(falkor_settings.updated({"embedding_backend": "onnx"}))
    assert isinstance(embedder, OnnxEmbedder) and embedder.can_embed_spans
    return embedder


@pytest.fixture(scope="module")
def passages(examples_dir: Path) -> list[str]:
    """12 real 2Wiki passages."""
    with open(examples_dir / "multihop/2wikimultihopqa/dev500.corpus.jsonl", encoding="utf-8") as fh:
        return [json.loads(next(fh))["text"] for _ in range(12)]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The texts of each forward pass of the ONNX embedder (one entry per ``_forward`` call) during the test."""
    out: list[int] = []
    forward = OnnxEmbedder._forward

    def counting(self: OnnxEmbedder, texts: Sequence[str]) -> Iterator[Batch]:
        out.append(len(texts))
        return forward(self, texts)

    monkeypatch.setattr(OnnxEmbedder, "_forward", counting)
    return out


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"[^.!?]+[.!?]?", text) if m.group().strip()]


def test_span_vectors_are_the_mean_of_the_span_token_states(onnx: OnnxEmbedder, passages: list[str]) -> None:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    spans = [_sentence_spans(t) for t in passages]
    vectors, late = onnx.embed_spans(passages, spans)
    np.testing.assert_array_equal(vectors, onnx.embed(passages))  # the text vectors: exactly embed's
    assert [len(v) for v in late] == [len(s) for s in spans]

    # the forward pass of one text, done here by hand: own session, own tokenizer, own span -> tokens mapping
    text = passages[3]
    tok = Tokenizer.from_file(str(onnx.spec.transformer_dir / "tokenizer.json"))
    enc = tok.encode(text)
    session = ort.InferenceSession(str(onnx.onnx_path), providers=["CPUExecutionProvider"])
    feeds = {
        "input_ids": np.array([enc.ids], dtype=np.int64),
        "attention_mask": np.array([enc.attention_mask], dtype=np.int64),
        "token_type_ids": np.array([enc.type_ids], dtype=np.int64),
    }
    states = session.run(None, {i.name: feeds[i.name] for i in session.get_inputs()})[0][0]
    assert len(spans[3]) >= 2
    for (a, b), got in zip(spans[3], late[3], strict=True):
        inside = [k for k, (s, e) in enumerate(enc.offsets) if e > s and s >= a and e <= b]
        want = states[inside].mean(axis=0)
        want /= np.linalg.norm(want)
        assert got is not None and got.shape == (onnx.dimension,)
        np.testing.assert_allclose(got, want, atol=2e-5)
    standalone = onnx.embed([text[a:b] for a, b in spans[3]])
    cos = (standalone * np.stack(cast(list[np.ndarray], late[3]))).sum(axis=1)  # (each one asserted not None above)
    assert (cos < 0.9999).all() and (cos > 0.5).all(), cos  # context-aware, yet still about the sentence


def test_truncated_and_empty_spans_have_no_vector(onnx: OnnxEmbedder) -> None:
    long = " ".join(["The river flows past the old mill."] * 60) + " Zebras graze at dawn."
    end = (long.index("Zebras"), len(long))
    spans = [[(0, 34), end, (5, 5), (10, 3), (len(long) // 3, len(long))], [(0, 14), (14, 14)]]
    vectors, late = onnx.embed_spans([long, "Alice met Bob."], spans)
    assert late[0][0] is not None and late[0][1] is None  # past max_seq_length: truncated away
    assert late[0][4] is None  # begins before the cut, ends after it: a vector of part of it would mislead
    assert late[0][2] is None and late[0][3] is None and late[1][1] is None  # empty, reversed
    assert late[1][0] is not None and vectors.shape == (2, onnx.dimension)
    with pytest.raises(ValueError, match="1 texts but 2 span lists"):
        onnx.embed_spans(["x"], [[], []])


def _graph(texts: list[str], questions: list[tuple[int, str, str]]) -> DocumentGraph:
    doc = DocumentRecord(id="d", uri="file:///x#1", title="Doc", mime="text/plain", sha256="s")
    chunks = [
        ChunkRecord(id=f"c{i}", document_id="d", parent_id="d", text=t, order=i, section_path="")
        for i, t in enumerate(texts)
    ]
    qs = [
        AtomicQuestionRecord(id=f"q{n}", chunk_id=f"c{i}", text=t, kind=kind)
        for n, (i, t, kind) in enumerate(questions)
    ]
    return DocumentGraph(document=doc, chunks=chunks, questions=qs)


def test_ingestion_pools_found_sentences_and_embeds_the_rest_as_before(onnx: OnnxEmbedder) -> None:
    long = " ".join(["The river flows past the old mill."] * 60) + " Zebras graze at dawn."
    texts = ["Alice met Bob in Paris. They went\nhome together.", long]
    questions = [
        (0, "Alice met Bob in Paris.", "sentence"),  # found: pooled
        (0, "They went home together.", "sentence"),  # found across a newline: pooled
        (0, "Where did Alice meet Bob?", "question"),  # an LLM question: embedded alone
        (0, "Carol stayed in Rome.", "sentence"),  # not in the chunk: embedded alone
        (1, "Zebras graze at dawn.", "sentence"),  # truncated away: embedded alone
    ]
    g = _graph(texts, questions)
    assert embed_layers([g], onnx, ["AtomicQuestion"], late_chunking=True) == 2 + 5
    alone = onnx.embed([t for _, t, _ in questions])
    got = np.array([q.embedding for q in g.questions], dtype=np.float32)
    cos = (alone * got).sum(axis=1)
    assert (cos[:2] < 0.9999).all() and (cos[:2] > 0.5).all(), cos
    np.testing.assert_allclose(cos[2:], 1.0, atol=1e-5)
    chunk_texts = [index_text("Doc", "", "text", t, None) for t in texts]
    np.testing.assert_array_equal(np.array([c.embedding for c in g.chunks], dtype=np.float32), onnx.embed(chunk_texts))

    off = _graph(texts, questions)  # the setting off: every question embedded alone, as before
    assert embed_layers([off], onnx, ["AtomicQuestion"]) == 7
    np.testing.assert_allclose((alone * np.array([q.embedding for q in off.questions])).sum(axis=1), 1.0, atol=1e-5)
    none = _graph(texts, questions)  # AtomicQuestion vectors off: none at all, late or not
    assert embed_layers([none], onnx, ["Document"], late_chunking=True) == 3
    assert all(q.embedding is None for q in none.questions) and none.chunks[0].embedding is not None


class _Plain:
    """An embedder without late chunking (like torch or OpenAI): wraps ``embed`` only."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.dimension, self.model_name = inner, inner.dimension, inner.model_name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed(texts)


def test_embedders_without_the_method_embed_tags_as_before(onnx: OnnxEmbedder, tmp_path: Path) -> None:
    plain = _Plain(onnx)
    assert not can_embed_spans(plain) and not can_embed_spans(CachedEmbedder(plain, tmp_path / "c.sqlite3"))
    g = _graph(["Alice met Bob in Paris."], [(0, "Alice met Bob in Paris.", "sentence")])
    assert embed_layers([g], plain, None, late_chunking=True) == 3
    np.testing.assert_allclose(
        np.dot(g.questions[0].embedding, onnx.embed(["Alice met Bob in Paris."])[0]),  # type: ignore[arg-type]
        1.0,
        atol=1e-5,
    )


def test_cache_keeps_late_vectors_apart_and_skips_cached_chunks(
    onnx: OnnxEmbedder, passages: list[str], tmp_path: Path, calls: list[int]
) -> None:
    cache = CachedEmbedder(onnx, tmp_path / "cache.sqlite3")
    spans = [_sentence_spans(t) for t in passages[:4]] + [[(0, 3)]]
    texts = passages[:4] + ["Hi." + " x" * 400]
    spans[4].append((len(texts[4]) - 2, len(texts[4])))  # truncated: cached as "no vector"
    want_v, want_late = onnx.embed_spans(texts, spans)
    calls.clear()
    v, late = cache.embed_spans(texts, spans)
    assert calls == [5] and late[4][1] is None
    np.testing.assert_array_equal(v, want_v)
    for a, b in zip(late, want_late, strict=True):
        assert [x is None for x in a] == [x is None for x in b]
        np.testing.assert_array_equal(
            np.stack([x for x in a if x is not None]), np.stack([x for x in b if x is not None])
        )
    v2, late2 = cache.embed_spans(texts, spans)  # everything cached: no forward pass
    assert calls == [5] and late2[4][1] is None
    np.testing.assert_array_equal(v2, v)
    np.testing.assert_array_equal(late2[0][0], late[0][0])
    sentence = passages[3][slice(*spans[3][1])]  # a sentence, not its whole passage
    assert not np.allclose(cache.embed([sentence])[0], late[3][1])  # type: ignore[arg-type]  # the plain text's vector is its own
    assert calls == [5, 1]
    cache.embed_spans(texts[:2], [spans[0], spans[1][:1] + [(0, 5)]])  # a new span: that chunk runs again
    assert calls == [5, 1, 1]


@pytest.fixture(scope="module")
def musique(examples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12 MuSiQue passages as a corpus file."""
    src = examples_dir / "multihop" / "musique" / "hipporag_train100.corpus.jsonl"
    path = tmp_path_factory.mktemp("late") / "musique12.jsonl"
    path.write_text("".join(src.open(encoding="utf-8").readlines()[:12]), encoding="utf-8")
    return path


def _ingest(settings: Settings, corpus: Path, name: str) -> KnowledgeBase:
    kb = KnowledgeBase(settings=settings.updated({"name": name}))
    kb.reset()
    report = kb.ingest([corpus], progress=False)
    assert report.added == 12 and report.failed == 0
    return kb


def test_knowledge_base_ingested_with_late_chunking(backend_settings: Settings, musique: Path, tmp_path: Path) -> None:
    settings = backend_settings.updated(
        {"late_chunking": True, "embedding_backend": "onnx", "embedding_cache_dir": tmp_path}
    )
    kb = _ingest(settings, musique, backend_settings.name + "late")
    try:
        count = kb.stats().nodes["AtomicQuestion"]
        probe = kb.embedder.embed(["a film"])[0].tolist()
        hits = kb.store.vector_search("AtomicQuestion", probe, k=count + 5)
        assert len(hits) == count > 20  # a vector on every atomic question
        texts = [h.properties["text"] for h in hits[:12]]
        cos = []
        for text, vec in zip(texts, kb.embedder.embed(texts), strict=True):
            own = [
                h
                for h in kb.store.vector_search("AtomicQuestion", vec.tolist(), k=count)
                if h.properties["text"] == text
            ]
            cos.append(own[0].score)
        # pooled in context (a short sentence leans on its chunk most: 'The previous editor was ...' 0.44),
        # yet still about the sentence
        assert all(0.3 < c < 0.9999 for c in cos) and np.mean(cos) > 0.7, sorted(zip(cos, texts))
    finally:
        kb.close()


def test_second_ingest_of_the_same_texts_runs_no_forward_pass(
    falkor_settings: Settings, musique: Path, tmp_path: Path, calls: list[int]
) -> None:
    settings = falkor_settings.updated(
        {"late_chunking": True, "embedding_backend": "onnx", "embedding_cache_dir": tmp_path}
    )
    first = _ingest(settings, musique, "late_a")
    first.close()
    assert calls and sum(calls) >= 12
    calls.clear()
    second = _ingest(settings, musique, "late_b")
    second.close()
    assert calls == []
