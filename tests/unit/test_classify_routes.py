"""Question classification and routing, method 'auto' (kbgraph.query.methods.classify; PIKE-RAG §3.2, §4.2): the class
parsed from the classifier's JSON, the level of each class, and the routed method being the registry's. The
classifier is a scripted stand-in (kbgraph.llm.fake), the routed methods are stubs: no store, no model."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import cast

import pytest
from pydantic import ValidationError

from kbgraph.llm.fake import ScriptedLLM
from kbgraph.query.methods import classify
from kbgraph.query.context import QueryContext
from kbgraph.query.methods.classify import ClassifyOutput, QuestionClass, answer_auto, enum_value, route
from kbgraph.query.methods.registry import METHODS, AnswerMethod
from kbgraph.query.models import Answer


def test_the_routed_functions_are_the_registrys() -> None:
    assert set(classify.LEVEL_RUN) == set(classify.LEVEL_METHODS.values())
    for name, run in classify.LEVEL_RUN.items():
        assert METHODS[name].run is run and METHODS[name].kind == "answer"
    assert METHODS["auto"].run is answer_auto


@pytest.mark.parametrize(
    "value, parsed",
    [
        ("Linkable-Reasoning", "linkable_reasoning"),
        (" linkable & reasoning ", "linkable_reasoning"),
        ("FACTUAL", "factual"),
        ("non-factual", "non-factual"),
        ("predictive (not factual)", "predictive (not factual)"),
        (3, 3),
    ],
)
def test_a_class_is_its_enum_value_up_to_case_and_separators_never_a_substring(
    value: str | int, parsed: str | int
) -> None:
    assert enum_value(value, classify.KINDS) == parsed


def test_the_classification_answer_is_validated() -> None:
    out = ClassifyOutput.model_validate({"kind": "Linkable Reasoning", "subtype": "Comparative", "rationale": 5})
    assert (out.kind, out.subtype, out.rationale) == ("linkable_reasoning", "comparative", "5")
    assert ClassifyOutput.model_validate({"kind": "factual", "subtype": "bridging"}).subtype is None
    assert ClassifyOutput.model_validate({"kind": "linkable_reasoning", "subtype": "other"}).subtype is None
    with pytest.raises(ValidationError):
        ClassifyOutput.model_validate({"kind": "non-factual"})


@pytest.mark.parametrize(
    "kind, level",
    [
        ("factual", "L1"),
        ("linkable_reasoning", "L2"),
        ("predictive", "L2"),
        ("creative", "L2"),
        ("unknown", "L2"),
        ("anything", "L2"),
    ],
)
def test_each_class_has_its_level(kind: str, level: str) -> None:
    assert route(kind) == level


@pytest.mark.parametrize("kind, route_taken", [("factual", "L1:l1"), ("creative", "L2:pike")])
def test_auto_answers_with_the_method_of_the_level(
    monkeypatch: pytest.MonkeyPatch, kind: str, route_taken: str
) -> None:
    ran: list[str] = []

    def stub(name: str) -> AnswerMethod:
        def run(question: str, ctx: QueryContext, /) -> Answer:
            ran.append(name)
            return Answer(question=question, answer=f"by {name}", method=name, rationale="because")

        return run

    monkeypatch.setattr(classify, "LEVEL_RUN", {"l1": stub("l1"), "pike": stub("pike")})
    llm = ScriptedLLM([json.dumps({"rationale": "it is", "kind": kind})])
    answer = answer_auto("Who?", cast(QueryContext, SimpleNamespace(need_llm=lambda: llm)))  # need_llm only
    assert ran == [route_taken.split(":")[1]] and answer.answer == f"by {ran[0]}"
    assert (answer.method, answer.question_class, answer.route) == ("auto", kind, route_taken)
    assert answer.rationale.startswith("Question class:") and answer.rationale.endswith("because")
    assert answer.usage.calls == 1  # the classification


def test_an_unusable_classification_is_unknown_and_goes_to_l2() -> None:
    qc = classify.classify_question("Who?", ScriptedLLM(["no json", "still no json"]))
    assert isinstance(qc, QuestionClass) and qc.kind == "unknown" and "no valid classification" in qc.rationale
