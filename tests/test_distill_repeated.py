"""Distill reads a repeated chunk text once (``kbgraph.ingest.distill.pool.unique_chunks``): the same document
in two formats, or boilerplate shared by documents, is parsed by spaCy once and every copy gets the records it
would have had if parsed itself (its own ids), in chunk order. Real 2Wiki passages, the real spaCy pipeline."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kbgraph.ingest.distill import Distilled, distill
from kbgraph.ingest.distill.pool import unique_chunks
from kbgraph.models import ChunkRecord, stable_id

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc


@pytest.fixture(scope="module")
def nlp() -> Language:
    from kbgraph.ingest.nlp import load_nlp

    return load_nlp()


def _passages(examples_dir: Path, n: int) -> list[dict[str, Any]]:
    lines = (examples_dir / "multihop/2wikimultihopqa/dev500.corpus.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[:n]]


def _copy(rows: list[dict[str, Any]], doc: str) -> list[ChunkRecord]:
    return [
        ChunkRecord(
            id=stable_id("chunk", doc, r["id"]),
            document_id=f"doc:{doc}",
            parent_id=f"doc:{doc}",
            text=r["text"],
            order=i,
        )
        for i, r in enumerate(rows)
    ]


def _per_chunk(d: Distilled, chunks: list[ChunkRecord]) -> list[tuple[Any, ...]]:
    """Each chunk's records, without ids or chunk ids: what a copy must share with its first."""
    out = []
    for c in chunks:
        qs = [(q.text, q.kind) for q in d.questions if q.chunk_id == c.id]
        ts = [(t.subject, t.predicate, t.object, t.subject_id, t.object_id) for t in d.triples if t.chunk_id == c.id]
        ms = [m.entity_id for m in d.mentions if m.chunk_id == c.id]
        out.append((qs, ts, ms))
    return out


class _Counting:
    """Counts the texts a spaCy pipeline's ``pipe`` is given (the extraction's only way to parse)."""

    def __init__(self, nlp: Language) -> None:
        self.inner, self.texts = nlp.pipe, 0  # the bound method, before it is patched

    def pipe(self, texts: Iterable[str], **kw: Any) -> Iterator[Doc]:
        def counted() -> Iterator[str]:
            for t in texts:
                self.texts += 1
                yield t

        return self.inner(counted(), **kw)


def test_a_repeated_text_is_parsed_once_and_every_copy_gets_its_records(
    nlp: Language, examples_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _passages(examples_dir, 12)
    a, b = _copy(rows, "a"), _copy(rows[:8], "b")  # b: the first 8 passages of a again, another document
    unique = ChunkRecord(
        id="chunk:u",
        document_id="doc:b",
        parent_id="doc:b",
        text="Ada Lovelace wrote the first program for Charles Babbage's Analytical Engine in 1843.",
        order=8,
    )
    chunks = a[:6] + b + a[6:] + [unique]
    counter = _Counting(nlp)
    monkeypatch.setattr(nlp, "pipe", counter.pipe)
    both = distill(chunks, nlp=nlp, n_process=1)
    monkeypatch.undo()
    assert counter.texts == len(a) + 1  # b's 8 copies not parsed again

    alone = distill(b + [unique], nlp=nlp, n_process=1)  # each of b's texts parsed for itself
    assert _per_chunk(both, b + [unique]) == _per_chunk(alone, b + [unique])
    assert all(qs for qs, _t, _m in _per_chunk(both, b))  # every copy has its tags
    assert {q.id for q in both.questions if q.chunk_id in {c.id for c in b}} == {
        q.id for q in alone.questions if q.chunk_id != "chunk:u"
    }
    # records in chunk order, as extracting one chunk after the other gives them
    rank = {c.id: i for i, c in enumerate(chunks)}
    for part in (both.questions, both.triples, both.mentions):
        order = [rank[r.chunk_id] for r in part]
        assert order == sorted(order)


def test_titled_passages_repeat_only_under_the_same_title() -> None:
    same = [
        ChunkRecord(id=f"chunk:{i}", document_id=f"doc:{i}", parent_id=f"doc:{i}", text="Same words here.", order=0)
        for i in range(3)
    ]
    firsts, copies = unique_chunks(same, {"doc:0": "A", "doc:1": "B", "doc:2": "A"})
    assert [c.id for c in firsts] == ["chunk:0", "chunk:1"]
    assert [(c.id, f.id) for c, f in copies] == [("chunk:2", "chunk:0")]
    firsts, copies = unique_chunks(same, None)
    assert [c.id for c in firsts] == ["chunk:0"] and len(copies) == 2
    table = same[0].model_copy(update={"id": "chunk:t", "kind": "table"})
    assert len(unique_chunks([same[0], table], None)[0]) == 2  # another kind is read another way
