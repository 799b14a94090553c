"""The whole items of a JSON answer cut by the token limit (kbgraph.llm.json_answers.salvage_cut): kept when
each field is there and each list holds an item, dropped where the cut may have ended inside a value."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from kbgraph.ingest.distill.schemas import AtomicQuestions
from kbgraph.llm.json_answers import JSONAnswerError, salvage_cut
from kbgraph.query.answering import QAOutput

pytestmark = pytest.mark.unit


class Pair(BaseModel):
    subject: str
    obj: str


class Pairs(BaseModel):
    note: str
    pairs: list[Pair]


class Scores(BaseModel):
    note: str
    scores: list[float] = []


def test_the_questions_before_the_cut_are_kept() -> None:
    text = '{"questions": [\n  "Who directed Wild Ride?",\n  "When was Harvey Berman born?",\n  "Who direc'
    assert salvage_cut(text, AtomicQuestions).questions == ["Who directed Wild Ride?", "When was Harvey Berman born?"]


def test_a_cut_right_after_a_closed_string_keeps_it() -> None:
    assert salvage_cut('{"questions": ["Who directed Wild Ride?"', AtomicQuestions).questions == [
        "Who directed Wild Ride?"
    ]


@pytest.mark.parametrize(
    "text",
    [
        '{"questions": [',  # before the list's first item
        '{"questions": ["Who direc',  # inside the first item
        '{"questi',  # inside the first key
        "no JSON at all",
    ],
)
def test_nothing_whole_is_no_answer(text: str) -> None:
    with pytest.raises(JSONAnswerError):
        salvage_cut(text, AtomicQuestions)


def test_a_cut_inside_a_scalar_field_is_no_answer() -> None:
    """QAOutput's rationale cut mid-string: the field is missing, so there is no answer (the repair asks)."""
    with pytest.raises(JSONAnswerError, match="rationale"):
        salvage_cut('{"answer": "Paris", "rationale": "The capital of France is Paris, which', QAOutput)


def test_the_object_the_cut_ended_in_is_dropped() -> None:
    text = '{"note": "two", "pairs": [{"subject": "a", "obj": "b"}, {"subject": "c", "obj": "d'
    assert salvage_cut(text, Pairs).pairs == [Pair(subject="a", obj="b")]
    # even when it reads whole: the cut may have come before a closing brace that would have changed nothing,
    # or before more keys
    text = '{"note": "two", "pairs": [{"subject": "a", "obj": "b"}, {"subject": "c", "obj": "d"}'
    assert salvage_cut(text, Pairs).pairs == [Pair(subject="a", obj="b")]


def test_a_number_the_cut_may_have_ended_inside_is_dropped() -> None:
    """'0.7' cut from '0.75' reads as a number: the last number of a list goes, so does a last number field."""
    assert salvage_cut('{"note": "n", "scores": [0.5, 0.7', Scores).scores == [0.5]
    with pytest.raises(JSONAnswerError, match="scores"):  # an optional field cut off: its default is no answer
        salvage_cut('{"note": "n", "scores', Scores)


def test_a_think_block_before_the_answer_is_skipped() -> None:
    text = '<think>{"questions": ["Not this?"]}</think>{"questions": ["Who directed Wild Ride?", "When'
    assert salvage_cut(text, AtomicQuestions).questions == ["Who directed Wild Ride?"]
