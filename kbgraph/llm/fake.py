"""A deterministic LLM for tests: answers from a script, records every request.

``complete_json`` is :class:`kbgraph.llm.base.BaseLLM`'s, the same code as :class:`OpenAIClient`'s
(JSON prompt, extraction, pydantic validation, one repair request), so tests exercise the real JSON
handling, repairs included::

    llm = ScriptedLLM(['not json', '{"answer": "42"}'])
    llm.complete_json(messages, Answer)   # two calls: the first answer, then the repair
    assert len(llm.calls) == 2

Streamed requests (``complete_json(..., sink=...)``) answer the same script, in pieces of ``chunk_chars``
characters (``requests[i]["stream"]`` is then True). A scripted ``kbgraph.llm.json_answers.CutAnswer`` is an
answer the server stopped at the token limit (``finish_reason`` "length"), at the request's ``max_tokens``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from typing import Any

from kbgraph.llm.base import BaseLLM, Messages
from kbgraph.llm.json_answers import CutAnswer, cut_answer

Script = Iterable["str | BaseException"] | Callable[[Messages], str]


class ScriptedLLM(BaseLLM):
    """Answers each request with the next scripted response, or ``responder(messages)``.

    A scripted item that is an exception instance is raised instead (to simulate failures). Running out of
    responses fails the test with an AssertionError. ``calls`` holds the messages of every request (the
    JSON instructions and repair turns included); ``requests`` the same with model, temperature,
    max_tokens, response_format (the dict sent, or None), purpose and stream (a streamed request).
    ``chunk_chars``: the size of the pieces of a streamed answer.
    """

    def __init__(
        self,
        responses: Script,
        *,
        model: str = "scripted",
        temperature: float = 0.0,
        response_format: str = "none",
        chunk_chars: int = 4,
    ) -> None:
        super().__init__()
        self.chunk_chars = max(1, int(chunk_chars))
        self.default_model = model
        self.default_temperature = temperature
        self.response_format_mode = response_format
        if callable(responses):
            self._responder: Callable[[Messages], str] | None = responses
            self._queue: list[str | BaseException] = []
        else:
            self._responder = None
            self._queue = [responses] if isinstance(responses, str) else list(responses)
        self.calls: list[Messages] = []
        self.requests: list[dict[str, Any]] = []

    @property
    def remaining(self) -> int:
        """Scripted responses not used yet."""
        return len(self._queue)

    def _complete(
        self,
        messages: Messages,
        *,
        model: str,
        temperature: float,
        max_tokens: int | None,
        response_format: dict[str, Any] | None,
        purpose: str,
    ) -> str:
        snapshot = [dict(m) for m in messages]
        self.calls.append(snapshot)
        self.requests.append(
            {
                "messages": snapshot,
                "model": model,
                "temperature": temperature,
                "max_tokens": max_tokens,
                "response_format": response_format,
                "purpose": purpose,
                "stream": False,
            }
        )
        if self._responder is not None:
            text = self._responder(snapshot)
        else:
            if not self._queue:
                raise AssertionError(f"ScriptedLLM ran out of responses at call {len(self.calls)}")
            item = self._queue.pop(0)
            if isinstance(item, BaseException):
                raise item
            text = item
        if isinstance(text, CutAnswer) and text.max_tokens is None:
            text = cut_answer(text, max_tokens)  # a scripted cut happens at the request's limit
        # Rough token counts (words) so token accounting code paths see non-zero numbers.
        self._count(
            calls=1,
            prompt=sum(len(str(m.get("content", "")).split()) for m in snapshot),
            completion=len(text.split()),
        )
        return text

    def _stream(
        self,
        messages: Messages,
        *,
        model: str,
        temperature: float,
        max_tokens: int | None,
        response_format: dict[str, Any] | None,
        purpose: str,
    ) -> Generator[str, None, None]:
        text = self._complete(
            messages,
            model=model,
            temperature=temperature,
            max_tokens=max_tokens,
            response_format=response_format,
            purpose=purpose,
        )
        self.requests[-1]["stream"] = True
        for i in range(0, len(text), self.chunk_chars):
            yield text[i : i + self.chunk_chars]
        if isinstance(text, CutAnswer):
            yield cut_answer("", text.max_tokens)
