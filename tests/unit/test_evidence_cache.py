"""The retrieval-only answer keeps each chunk text's split into units between questions (kbgraph.query.evidence
SPLIT_CACHE), and nothing of one question: the answer to a question is the same after another question over the
same chunks as with every cache empty, a table row's label bonus follows the question that names it, and the
units are new objects on every call (their scores are per question)."""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import numpy as np
import pytest

import kbgraph.query.evidence as evidence
from kbgraph.query.evidence import evidence_answer
from kbgraph.query.models import ScoredChunk

pytestmark = pytest.mark.unit

TABLE = (
    "| State | Permit | Handgun |\n|---|---|---|\n| Alabama | 12,155 | 14,847 |\n| Kentucky | 264,140 | 9,001 |\n"
    "| Ohio | 1,200 | 3,400 |"
)
TEXT = (
    "The standing trustee must report suspected fraud to the United States Trustee. A chapter 13 plan pays "
    "creditors from the debtor's future income. Ducks eat seeds, insects and small fish."
)
CHUNKS = [
    ScoredChunk(id="t", score=1.0, text=TABLE, kind="table", document_title="NICS"),
    ScoredChunk(id="p", score=0.9, text=TEXT, document_title="Handbook"),
]


class WordEmbedder:
    """Bag of words hashed into 64 dimensions, L2-normalised: deterministic, no model (an Embedder)."""

    dimension = 64
    model_name = "words-64"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, zlib.crc32(word.encode()) % self.dimension] += 1.0
        unit: np.ndarray = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
        return unit


def _clear() -> None:
    for cached in (evidence._table, evidence._sentence_units, evidence._norm, evidence._sentence_like):
        cached.cache_clear()


@pytest.mark.parametrize(
    "first, second",
    [
        ("How many handgun checks were there in Kentucky?", "How many permit checks were there in Alabama?"),
        ("What must the standing trustee report?", "What do ducks eat?"),
        ("What do ducks eat?", "How many handgun checks were there in Ohio?"),
    ],
)
def test_an_answer_is_the_same_after_another_question(first: str, second: str) -> None:
    embedder = WordEmbedder()
    _clear()
    alone = evidence_answer(second, CHUNKS, embedder)
    _clear()
    evidence_answer(first, CHUNKS, embedder)
    assert evidence_answer(second, CHUNKS, embedder) == alone
    assert evidence._table.cache_info().hits >= 1  # the split was kept


def test_the_named_row_follows_the_question() -> None:
    embedder = WordEmbedder()
    for state, figure in (("Kentucky", "264,140"), ("Alabama", "12,155"), ("Kentucky", "264,140")):
        answer, _citations = evidence_answer(f"How many permit checks in {state}?", CHUNKS, embedder)
        assert answer.splitlines()[0].startswith(f"State: {state}; Permit: {figure}"), answer


def test_units_are_new_objects_on_every_call() -> None:
    first = evidence._units(CHUNKS[1], 0, "q")
    second = evidence._units(CHUNKS[1], 0, "q")
    assert [u.text for u in first] == [u.text for u in second] and len(first) == 3
    assert not any(a is b for a, b in zip(first, second, strict=True))


def test_a_named_row_and_column_give_the_cell_and_a_named_row_alone_the_row() -> None:
    """Issue 56: the question names a row (Kentucky) and a column (Handgun): the unit, and so the answer line and the
    citation's quote, is that cell with its row's label; naming no column gives the whole row."""
    embedder = WordEmbedder()
    answer, citations = evidence_answer("How many handgun checks in Kentucky?", CHUNKS, embedder)
    assert answer.splitlines()[0] == "State: Kentucky; Handgun: 9,001 [1]"
    assert citations[0].quote == "State: Kentucky; Handgun: 9,001"
    answer, _ = evidence_answer("What were the checks in Kentucky?", CHUNKS, embedder)
    assert answer.splitlines()[0] == "State: Kentucky; Permit: 264,140; Handgun: 9,001 [1]"
