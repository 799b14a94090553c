"""A question is cleaned once and its method looked up once on the way from a front end to the store (issue 59):
``clean_question`` returns a :class:`~kbgraph.query.ask.Question`, which cleaning again returns as it is, and
``answer_question`` / ``retrieve`` take the method's row when the caller looked it up."""

from __future__ import annotations

from typing import cast

import pytest

from kbgraph.errors import QueryError
from kbgraph.query import ask
from kbgraph.query.ask import Question, clean_question
from kbgraph.embed.base import Embedder
from kbgraph.query.context import QueryContext
from kbgraph.query.methods.registry import RetrievalRow
from kbgraph.query.models import ScoredChunk
from kbgraph.settings import Settings
from kbgraph.store import GraphStore


def test_clean_question_cleans_and_returns_a_question() -> None:
    q = clean_question("  Who founded\x00 X?\n")
    assert isinstance(q, Question) and q == "Who founded X?"
    for bad in ("", " \x01 ", "x" * (ask.MAX_QUESTION_CHARS + 1)):
        with pytest.raises(QueryError):
            clean_question(bad)


def test_a_question_is_not_cleaned_again() -> None:
    q = clean_question(" Who? ")
    assert clean_question(q) is q
    # a Question is trusted as clean: its text is not looked at again
    odd = Question(" kept as it is ")
    assert clean_question(odd) is odd


def test_retrieve_and_answer_run_the_row_they_are_given_without_a_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[tuple[str, int]] = []

    def run(question: str, ctx: QueryContext, *, k: int, explain: bool = False) -> list[ScoredChunk]:
        ran.append((question, k))
        return []

    def no_lookup(*args: object, **kwargs: object) -> object:
        raise AssertionError(f"the method was looked up again: {args}")

    row = RetrievalRow(name="toy", run=run, summary="a toy retrieval method")
    monkeypatch.setattr(ask, "get_method", no_lookup)
    q = clean_question("Who?")
    assert ask.retrieve(q, cast(QueryContext, None), k=3, method=row) == []
    assert ran == [("Who?", 3)]
    # no chunk: neither the store nor the embedder is read (evidence_answer returns ('', []) without chunks)
    ctx = QueryContext(cast(GraphStore, None), Settings(), cast(Embedder, None), None)
    answer = ask.answer_question(q, ctx, method=row, k=2)
    assert ran[-1] == ("Who?", 2) and answer.method == "toy" and answer.retrieval_only
