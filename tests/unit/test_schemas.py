"""The records (pydantic models) of the graph, of retrieval and answers, and of an evaluation run."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kbgraph.eval.runfolder import QuestionRecord, Tokens
from kbgraph.models import NODE_LABELS, VECTOR_LABELS, ChunkRecord, stable_id
from kbgraph.query.models import Answer, Contribution, HiragRound, MigresRound, ScoredChunk, TraceRound


def test_stable_ids_are_content_derived_and_prefixed() -> None:
    a = stable_id("chunk", "doc:1", "0", "abc")
    assert a == stable_id("chunk", "doc:1", "0", "abc") and a.startswith("chunk:") and len(a) == len("chunk:") + 24
    assert a != stable_id("chunk", "doc:1", "0abc")  # parts are separated, not concatenated
    assert a != stable_id("sec", "doc:1", "0", "abc")


def test_vector_labels_are_node_labels() -> None:
    assert set(VECTOR_LABELS) <= set(NODE_LABELS)


def test_a_chunk_record_checks_its_kind() -> None:
    c = ChunkRecord(id="c", document_id="d", parent_id="d", text="t", order=0)
    assert c.kind == "text" and c.section_path == "" and c.embedding is None
    with pytest.raises(ValidationError):
        ChunkRecord(id="c", document_id="d", parent_id="d", text="t", order=0, kind="image")


def test_an_answer_round_trips_with_its_trace_told_apart_by_type() -> None:
    answer = Answer(
        question="q",
        answer="a",
        method="pike",
        chunks=[
            ScoredChunk(
                id="c",
                score=0.5,
                breakdown=[Contribution(term="Chunk", node_id="c", similarity=0.5, weight=1.0, score=0.5)],
            )
        ],
        trace=[TraceRound(round=1), MigresRound(round=1), HiragRound(round=1)],
    )
    back = Answer.model_validate_json(answer.model_dump_json())
    assert back == answer
    assert [type(t).__name__ for t in back.trace] == ["TraceRound", "MigresRound", "HiragRound"]


def test_a_question_record_round_trips_and_counts_its_tokens() -> None:
    rec = QuestionRecord(question_id="q1", method="dense", question="?", tokens=Tokens(prompt=3, completion=4))
    assert rec.tokens.total == 7
    assert QuestionRecord.model_validate_json(rec.model_dump_json()) == rec
    with pytest.raises(ValidationError):
        QuestionRecord(question_id="q1", method="dense")  # type: ignore[call-arg]  # the question is required
