"""``Answer.trace`` as the rounds of the method that answered: its items are a union of the three kinds of round
(TraceRound | MigresRound | HiragRound, told apart by ``type``), a test reads one kind."""

from __future__ import annotations

from typing import TypeVar, cast

from kbgraph.query.models import Answer, HiragRound, MigresRound, TraceRound

R = TypeVar("R", TraceRound, MigresRound, HiragRound)


def trace_of(answer: Answer, kind: type[R]) -> list[R]:
    """``answer.trace`` itself (the same list), each of its rounds checked to be a ``kind``."""
    assert all(isinstance(r, kind) for r in answer.trace), [type(r).__name__ for r in answer.trace]
    return cast(list[R], answer.trace)
