"""Every answer schema sent to an LLM is bounded (issue 28): no string without maxLength, no array without
maxItems (kbgraph.llm.bounds), every schema the code sends is registered, and the token budget a request asks
for is sized from the schema's bounds."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from kbgraph.llm import ScriptedLLM
from kbgraph.llm.bounds import (
    ANSWER_SCHEMAS,
    CHARS_PER_TOKEN,
    MaxChars,
    MaxItems,
    UnboundedSchema,
    max_chars,
    token_budget,
    unbounded_paths,
)

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("kbgraph", "query", "ingest")


def _import_everything() -> None:
    """Import every module of the package, so every @answer_schema class is registered."""
    import kbgraph.ingest
    import kbgraph.query

    for pkg in (kbgraph, kbgraph.query, kbgraph.ingest):
        for info in pkgutil.walk_packages(pkg.__path__, f"{pkg.__name__}."):
            if not info.name.startswith(("kbgraph.cli", "kbgraph.serve", "kbgraph.neo4j_local")):
                importlib.import_module(info.name)


def _schemas_sent() -> dict[str, str]:
    """{schema name: where} of every ``complete_json(messages, Schema)`` and ``usable_json(llm, messages,
    Schema)`` call in the sources."""
    found: dict[str, str] = {}
    for top in SOURCES:
        for path in (REPO / top).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                position = {"complete_json": 1, "usable_json": 2}.get(name)
                if position is None or len(node.args) <= position:
                    continue
                arg = node.args[position]
                if isinstance(arg, ast.Name) and arg.id[:1].isupper():
                    found[arg.id] = f"{path.relative_to(REPO)}:{node.lineno}"
    return found


def test_every_answer_schema_is_bounded() -> None:
    _import_everything()
    assert len(ANSWER_SCHEMAS) >= 15
    problems = {name: unbounded_paths(schema) for name, schema in ANSWER_SCHEMAS.items()}
    assert {k: v for k, v in problems.items() if v} == {}


def _patterns(node: Any, found: list[str]) -> list[str]:
    if isinstance(node, dict):
        if isinstance(node.get("pattern"), str):
            found.append(node["pattern"])
        for v in node.values():
            _patterns(v, found)
    elif isinstance(node, list):
        for v in node:
            _patterns(v, found)
    return found


def test_no_pattern_lets_a_decoder_write_a_raw_quote() -> None:
    """llama.cpp applies a string's pattern to the raw JSON text: a pattern whose characters may be '"' or
    '\\' (a negated class without them, '.') lets a constrained decoder write invalid JSON, which llama-server
    refuses with a 500 ("does not match the expected peg-native format")."""
    import re

    _import_everything()
    patterns = {schema.__name__: _patterns(schema.model_json_schema(), []) for schema in ANSWER_SCHEMAS.values()}
    patterns = {name: found for name, found in patterns.items() if found}
    assert "AtomicQuestions" in patterns  # the check is not vacuous
    loose = re.compile(r"\[\^(?![^\]]*\"[^\]]*\])[^\]]*\]|(?<!\\)\.")  # [^...] without '"', or a bare '.'
    assert {
        n: [p for p in found if loose.search(p)] for n, found in patterns.items() if any(loose.search(p) for p in found)
    } == {}
    from kbgraph.ingest.distill.schemas import QUESTION_PATTERN

    assert re.fullmatch(QUESTION_PATTERN, "Who directed Wild Ride?")
    assert not re.fullmatch(QUESTION_PATTERN, 'Is "Wild Ride" a film?')
    assert not re.fullmatch(QUESTION_PATTERN, "Is \\ a film?")


def test_every_schema_sent_is_registered() -> None:
    _import_everything()
    sent = _schemas_sent()
    # the calls that send schemas (a rename of the helpers would make this test vacuous)
    assert {"QAOutput", "Proposal", "NewQueries", "LeafOutput", "MainOutput", "AtomicQuestions"} <= set(sent)
    registered = {schema.__name__ for schema in ANSWER_SCHEMAS.values()}
    assert {name: where for name, where in sent.items() if name not in registered} == {}


class Loose(BaseModel):
    text: str = ""
    items: list[str] = Field(default_factory=list)
    table: dict[str, int] = Field(default_factory=dict)
    pattern: str = Field("", pattern=r"^a+$", max_length=10)


class Tight(BaseModel):
    text: Annotated[str, MaxChars(30)] = ""
    items: Annotated[list[Annotated[str, MaxChars(10)]], MaxItems(3)] = Field(default_factory=list)
    pattern: str = Field("", pattern=r"^a{1,9}$", max_length=10)
    n: int = 0


def test_unbounded_places_are_named() -> None:
    problems = unbounded_paths(Loose)
    assert any(p.startswith("text:") for p in problems)
    assert any(p.startswith("items:") and "maxItems" in p for p in problems)
    assert any(p.startswith("items[]:") and "maxLength" in p for p in problems)
    assert any(p.startswith("table:") for p in problems)
    assert any(p.startswith("pattern:") and "unbounded repetition" in p for p in problems)
    with pytest.raises(UnboundedSchema, match="Loose is not bounded"):
        token_budget(Loose)
    assert unbounded_paths(Tight) == []


def test_budget_covers_the_longest_answer() -> None:
    """The longest answer Tight allows, written out, has max_chars characters or fewer, and the budget holds
    it at CHARS_PER_TOKEN characters a token."""
    longest = Tight(text="x" * 30, items=["y" * 10] * 3, pattern="a" * 9, n=-(10**19)).model_dump_json()
    assert len(longest) <= max_chars(Tight)
    assert token_budget(Tight) * CHARS_PER_TOKEN >= max_chars(Tight)


def test_longer_values_are_cut_not_refused() -> None:
    """An endpoint without a grammar may write more: the value is cut to the bound, the answer still valid."""
    t = Tight.model_validate({"text": "x" * 100, "items": ["y" * 50] * 9})
    assert t.text == "x" * 30 and t.items == ["y" * 10] * 3


def test_requests_ask_for_the_schema_budget() -> None:
    """Through the scripted LLM: each JSON request's max_tokens is the schema's budget (default None)."""
    from kbgraph.ingest.distill.schemas import AtomicQuestions
    from kbgraph.query.methods.decompose import Proposal

    llm = ScriptedLLM(['{"thinking": "", "sub_questions": []}', '{"questions": ["Who?"]}'])
    llm.complete_json([{"role": "user", "content": "q"}], Proposal)
    llm.complete_json([{"role": "user", "content": "c"}], AtomicQuestions)
    assert [r["max_tokens"] for r in llm.requests] == [token_budget(Proposal), token_budget(AtomicQuestions)]


def test_schema_sent_requires_every_field_and_a_non_empty_item() -> None:
    """A constrained decoder may close an object without a field that has a default, or a list item at once:
    SmolLM2-135M answered the proposer with only ``thinking`` (or ``[""]``) on 8 of 20 questions, ending
    Algorithm 1 after one round. The schema sent requires every property, at every depth, and sub-questions
    and MIGRES queries have a minimum length; validation keeps the defaults for unconstrained endpoints."""
    from kbgraph.llm.structured import response_format
    from kbgraph.query.methods.decompose import SUB_QUESTION_MIN_CHARS, Proposal
    from kbgraph.query.methods.migres import LeafOutput, NewQueries

    sent = response_format("json_schema", Proposal)["json_schema"]["schema"]  # type: ignore[index]
    assert sent["required"] == ["thinking", "sub_questions"]
    assert sent["properties"]["sub_questions"]["items"]["minLength"] == SUB_QUESTION_MIN_CHARS
    assert response_format("json_object_schema", NewQueries)["schema"]["properties"]["queries"]["items"]["minLength"]  # type: ignore[index]
    assert response_format("json_schema", NewQueries)["json_schema"]["schema"]["required"] == ["queries"]  # type: ignore[index]
    # only the loops that stop on an empty answer opt in: required, the bounded lists a small model fills made
    # its atomizing answers longer and more often cut
    from kbgraph.ingest.distill.schemas import AtomicQuestions

    assert "required" not in response_format("json_schema", AtomicQuestions)["json_schema"]["schema"]  # type: ignore[index]
    assert "required" not in response_format("json_schema", LeafOutput)["json_schema"]["schema"]  # type: ignore[index]
    # unconstrained endpoints: the defaults, empty items dropped, short ones kept, repeats once
    assert Proposal.model_validate({"thinking": "x"}).sub_questions == []
    answer = Proposal.model_validate({"sub_questions": ["", "Who?", "Who is Harvey Berman?", "who is harvey berman?"]})
    assert answer.sub_questions == ["Who?", "Who is Harvey Berman?"]
