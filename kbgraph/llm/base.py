"""The server-independent half of every LLM client: the ``LLM`` protocol, token accounting (``Usage``) and
:class:`BaseLLM`, which holds the default model/temperature, the JSON prompt, extraction and pydantic
validation of JSON answers, the structured-output modes (``kbgraph.llm.structured``), the one repair retry and
streamed answers (``complete_json(..., sink=...)``: each request's text is passed to a
:class:`kbgraph.llm.json_stream.TextSink` as it arrives; subclasses stream in ``_stream``).
Both :class:`kbgraph.llm.client.OpenAIClient` and :class:`kbgraph.llm.fake.ScriptedLLM` inherit it, so tests
exercise the real JSON handling. Its JSON prompts are PIKE-RAG's (§5.2.1 chunking, §5.3.1 knowledge atomizing,
§5.3.2 knowledge-aware task decomposition).
"""

from __future__ import annotations

import contextvars
import logging
import threading
import weakref
from collections.abc import Generator, Iterator
from contextlib import closing, contextmanager
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from kbgraph.errors import LLMContextError, LLMError
from kbgraph.llm.bounds import UnboundedSchema, token_budget
from kbgraph.llm.json_answers import (
    REPAIR_PROMPT,
    CutAnswer,
    CutAnswerError,
    JSONAnswerError,
    cut_answer,
    cut_message,
    describe_error,
    parse_json_answer,
    salvage_cut,
    with_json_instructions,
)
from kbgraph.llm.json_stream import TextSink
from kbgraph.llm.structured import MODES, FormatMemory, JSONStats, Mode, next_mode, response_format
from kbgraph.text import one_line

__all__ = ["LLM", "BaseLLM", "FormatRejected", "Messages", "Usage", "UsageTally", "usable_json"]

log = logging.getLogger("kbgraph.llm.client")  # the name it had when this code lived there

M = TypeVar("M", bound=BaseModel)

Messages = list[dict[str, str]]


class Usage(BaseModel):
    """What a client has spent: answered requests, tokens reported by the server, wall time of real
    requests (retries and backoff included), and answers served from the cache."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cached_calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class UsageTally:
    """What one piece of work (an answer, a question of an evaluation) spends on LLMs, counted as it is spent:
    while the tally lives, every :class:`BaseLLM` request made **in the context that created it** (its thread, or
    a copy of its context, e.g. one request of ``kbgraph serve``) is added to ``usage`` too. Other requests on
    the same client, from other threads or requests at the same time, are not: unlike deltas of the shared
    ``client.usage``, a tally is per request. Tallies nest (an answer's tally inside an evaluation's)."""

    __slots__ = ("usage", "__weakref__")

    def __init__(self) -> None:
        self.usage = Usage()
        live = tuple(r for r in _TALLIES.get() if r() is not None)
        _TALLIES.set((*live, weakref.ref(self)))


#: The live tallies of the current context (weak: a tally is dropped with its owner).
_TALLIES: contextvars.ContextVar[tuple[weakref.ref[UsageTally], ...]] = contextvars.ContextVar(
    "kbgraph_llm_tallies", default=()
)


@runtime_checkable
class LLM(Protocol):
    """A chat model, the one protocol every caller of an LLM imports: plain completions (Self-Ask, the judge) and
    schema-validated JSON answers (the prompts of PIKE-RAG Algorithm 1, the QA prompt, distillation, tagging).
    ``usage`` has ``calls``, ``prompt_tokens``, ``completion_tokens``, ``seconds`` and ``cached_calls``, read as
    deltas by ``kbgraph.query.answering.UsageMeter``. ``sink`` streams a JSON answer's text as it is generated;
    it is passed only when an answer is streamed. Errors: ``kbgraph.errors.LLMError``."""

    usage: Usage

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """One plain completion (Self-Ask, the judge); an implementation's ``usage`` counts it.
        Args:
            messages: the chat, ``[{"role": "system" | "user" | "assistant", "content": text}, ...]``.
            model: the model (default: the client's, setting ``llm_model``).
            temperature: the sampling temperature (default: the client's, ``llm_temperature``).
            max_tokens: the answer's token limit (default: the client's, ``llm_max_tokens``; None: the server's).
        Returns:
            The answer text.
        Raises:
            LLMError: the server fails or refuses (after the client's retries), or no model is set.
            LLMContextError: the prompt does not fit the server's context window."""

    def complete_json(
        self,
        messages: list[dict[str, str]],
        schema: type[M],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        sink: TextSink | None = None,
    ) -> M:
        """The answer as a validated ``schema`` instance, one repair request when it does not (PIKE-RAG §5.3 prompts).
        Args:
            messages: the chat, as :meth:`complete`'s (the schema is added to the system message).
            schema: the pydantic model of the answer.
            model: as :meth:`complete`'s.
            temperature: as :meth:`complete`'s.
            max_tokens: the answer's token limit (default: enough for any answer the bounded schema allows).
            sink: stream the answer: each request's text goes to ``sink.text`` as it arrives, ``sink.restart()``
                before the repair request; an exception of ``sink`` ends the request and propagates.
        Returns:
            The validated ``schema`` instance.
        Raises:
            LLMError: the repaired answer is still unusable (its cause a ValueError) or the server fails.
            LLMContextError: the prompt does not fit the server's context window."""


def usable_json(llm: LLM, messages: list[dict[str, str]], schema: type[M]) -> tuple[M | None, str]:
    """``llm.complete_json(messages, schema)`` where an unusable answer is an expected outcome.
    Args:
        llm: the client.
        messages: the chat, as :meth:`LLM.complete`'s.
        schema: the pydantic model of the answer.
    Returns:
        (the validated answer, "") or (None, why) when it is no valid ``schema`` JSON even after one repair request.
    Raises:
        LLMError: the server itself fails (unreachable, 401, ...: an LLMError not caused by the answer)."""
    try:
        answer = llm.complete_json(messages, schema)
        if not isinstance(answer, schema):
            answer = schema.model_validate(answer.model_dump() if isinstance(answer, BaseModel) else answer)
        return answer, ""
    except LLMError as exc:
        if not isinstance(exc.__cause__, ValueError):
            raise
        return None, str(exc)
    except (ValueError, TypeError) as exc:
        return None, str(exc)


class BaseLLM:
    """The server-independent half of an LLM client. Subclasses implement :meth:`_complete`.

    ``response_format_mode``: how JSON answers are constrained (``kbgraph.llm.structured``): ``auto`` probes
    json_schema -> json_object_schema -> json_object -> none per endpoint and remembers what was answered;
    a fixed mode is sent as it is (the scripted fake defaults to ``none``). ``json_stats``: per prompt
    (schema name), JSON answers validated, repaired and failed.
    """

    usage: Usage
    default_model: str | None = None
    default_temperature: float = 0.0
    response_format_mode: str = "none"
    endpoint: str = "local"
    default_max_tokens: int | None = None

    def __init__(self) -> None:
        self.usage = Usage()
        self._usage_lock = threading.Lock()
        self.json_stats: dict[str, JSONStats] = {}
        self._formats = FormatMemory(None)

    # --- public API ----------------------------------------------------------------------------
    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> str:
        model, temperature = self._resolve(model, temperature)
        return self._complete(
            [dict(m) for m in messages],
            model=model,
            temperature=temperature,
            max_tokens=self._max(max_tokens),
            response_format=None,
            purpose="completion",
        )

    def complete_json(
        self,
        messages: list[dict[str, str]],
        schema: type[M],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        sink: TextSink | None = None,
    ) -> M:
        """A ``schema`` instance from the model's answer: the schema in the system message and, where the
        endpoint takes it, in ``response_format``; one repair request when the answer does not validate (an
        answer the server cut at the token limit is first read for its whole items: ``salvage_cut``).
        ``sink``: stream the answer: every request's text goes to ``sink.text`` piece by piece as the server
        sends it (a cached answer as one piece), and ``sink.restart()`` comes before the repair request.
        Raises LLMError when the repaired answer is still unusable (its cause a ValueError) or the server
        fails (also mid-stream); LLMContextError when the prompt does not fit the server's context. An
        exception raised by ``sink`` ends the request and propagates."""
        model, temperature = self._resolve(model, temperature)
        budget = self.json_max_tokens(schema, max_tokens)
        params: dict[str, Any] = {"model": model, "temperature": temperature, "max_tokens": budget}
        stats = self._stats(schema)
        first = with_json_instructions(messages, schema)
        with self._unusable_counted(stats):
            text, fmt = self._send_json(first, schema, params, sink)
        cut = isinstance(text, CutAnswer)
        if cut:
            self._tally(stats, "cut")
        try:
            answer = parse_json_answer(text, schema)
            self._tally(stats, "answers")
            return answer
        except ValueError as exc:
            error = cut_message(budget) + "; write a shorter answer" if cut else describe_error(exc)
        if cut and (salvaged := self._salvaged(text, schema, stats)) is not None:
            return salvaged
        log.info("LLM answer is not a valid %s (%s); asking for a repair", schema.__name__, error)
        repair = first + [
            {"role": "assistant", "content": echoed(str(text))},
            {"role": "user", "content": REPAIR_PROMPT.format(error=error)},
        ]
        if sink is not None:
            sink.restart()
        with self._unusable_counted(stats):
            try:
                text = self._request(repair, params, fmt, f"{schema.__name__} repair", sink)
            except LLMContextError as exc:  # the first prompt fitted: the answer is unusable, not the prompt
                self._tally(stats, "failed")
                self._forget(first, **params, response_format=fmt)
                unusable = ValueError(f"unusable answer ({error}); its repair request does not fit the context")
                unusable.__cause__ = exc
                raise LLMError(
                    f"the LLM ({model}) gave no valid {schema.__name__} JSON ({one_line(error, 160)}), and the repair "
                    f"request does not fit the context ({one_line(exc, 200)})"
                ) from unusable  # an unusable answer (cause ValueError): callers fall back as for a failed repair
        if isinstance(text, CutAnswer):
            self._tally(stats, "cut")
            cut = True
        try:
            answer = parse_json_answer(text, schema)
            self._tally(stats, "answers", "repaired")
            return answer
        except ValueError as exc:
            if isinstance(text, CutAnswer) and (salvaged := self._salvaged(text, schema, stats)) is not None:
                self._tally(stats, "repaired")
                return salvaged
            self._tally(stats, "failed")
            # Keep neither bad answer: the next run asks the server again instead of replaying the failure.
            self._forget(first, **params, response_format=fmt)
            self._forget(repair, **params, response_format=fmt)
            if cut:
                raise LLMError(
                    f"the LLM ({model}) gave no valid {schema.__name__} JSON: {cut_message(budget)}, even after a "
                    f"repair request; raise KBGRAPH_LLM_MAX_TOKENS (JSON answers get the larger of it and the "
                    f"schema's bound, here {budget} tokens) or try a stronger model (KBGRAPH_LLM_MODEL)"
                ) from CutAnswerError(cut_message(budget))
            raise LLMError(
                f"the LLM ({model}) gave no valid {schema.__name__} JSON even after a repair request "
                f"({one_line(describe_error(exc), 200)}); try a stronger model (KBGRAPH_LLM_MODEL)"
            ) from exc

    def json_max_tokens(self, schema: type[BaseModel], max_tokens: int | None = None) -> int | None:
        """The token budget of a ``schema`` answer: ``max_tokens`` when given, else the larger of the client's
        default (``llm_max_tokens``) and ``kbgraph.llm.bounds.token_budget(schema)``, so any answer the bounded
        schema allows fits; the default alone for an unbounded schema (None: the server's limit)."""
        if max_tokens is not None:
            return max_tokens
        try:
            need = token_budget(schema)
        except UnboundedSchema:
            log.debug("%s is not bounded; its answers get max_tokens %s", schema.__name__, self.default_max_tokens)
            return self.default_max_tokens
        return max(need, self.default_max_tokens or 0)

    def json_report(self) -> dict[str, dict[str, float]]:
        """Per prompt (schema name): answers, repaired, failed and the share that needed a repair."""
        with self._usage_lock:
            return {
                name: {**s.model_dump(), "repair_share": round(s.repair_share, 4)}
                for name, s in sorted(self.json_stats.items())
            }

    # --- structured outputs -------------------------------------------------------------------------
    def _send_json(
        self, messages: Messages, schema: type[BaseModel], params: dict[str, Any], sink: TextSink | None = None
    ) -> tuple[str, dict[str, Any] | None]:
        """Send a JSON request in the endpoint's mode; in ``auto``, fall back on a rejected mode and remember
        the first one answered. Returns (answer text, the response_format used)."""
        auto = self.response_format_mode == "auto"
        mode: Mode = (
            (self._formats.get(self._memory_key(params["model"])) or MODES[0])
            if auto
            else (self.response_format_mode if self.response_format_mode in MODES else "none")
        )
        while True:
            fmt = response_format(mode, schema)
            try:
                text = self._request(messages, params, fmt, schema.__name__, sink)
            except FormatRejected as exc:
                if not auto or mode == "none":
                    raise LLMError(
                        f"the LLM server at {self.endpoint} does not take response_format {mode} ({exc}); "
                        "set KBGRAPH_LLM_RESPONSE_FORMAT=auto"
                    ) from None
                log.info("%s rejects response_format %s (%s); trying %s", self.endpoint, mode, exc, next_mode(mode))
                mode = next_mode(mode)
                continue
            if auto:
                self._formats.put(self._memory_key(params["model"]), mode)
            return text, fmt

    def _request(
        self,
        messages: Messages,
        params: dict[str, Any],
        fmt: dict[str, Any] | None,
        purpose: str,
        sink: TextSink | None,
    ) -> str:
        """One request's answer text: :meth:`_complete`, or with a ``sink`` :meth:`_stream`, each piece passed to
        ``sink.text`` as it arrives (the stream is closed when the sink raises)."""
        if sink is None:
            return self._complete(messages, **params, response_format=fmt, purpose=purpose)
        parts: list[str] = []
        cut: CutAnswer | None = None
        with closing(self._stream(messages, **params, response_format=fmt, purpose=purpose)) as pieces:
            for piece in pieces:
                if isinstance(piece, CutAnswer):  # the stream ended at the token limit
                    cut = piece
                if piece:
                    parts.append(piece)
                    sink.text(piece)
        text = "".join(parts)
        return cut_answer(text, cut.max_tokens) if cut is not None else text

    def _memory_key(self, model: str) -> str:
        return f"{self.endpoint}|{model}"

    def _stats(self, schema: type[BaseModel]) -> JSONStats:
        with self._usage_lock:
            return self.json_stats.setdefault(schema.__name__, JSONStats())

    @contextmanager
    def _unusable_counted(self, stats: JSONStats) -> Iterator[None]:
        """A request whose answer the server itself could not parse (an LLMError caused by a JSONAnswerError,
        e.g. llama-server's grammar output it rejects) is a failed answer of the schema, counted as such."""
        try:
            yield
        except LLMError as exc:
            if isinstance(exc.__cause__, JSONAnswerError):
                self._tally(stats, "failed")
            raise

    def _salvaged(self, text: str, schema: type[M], stats: JSONStats) -> M | None:
        """The whole items of an answer cut by the token limit (``salvage_cut``), counted as an answer and
        ``salvaged``; None when nothing whole is left (the caller repairs or fails as before)."""
        try:
            answer = salvage_cut(text, schema)
        except ValueError as exc:
            log.debug("the cut %s answer has nothing whole to keep: %s", schema.__name__, one_line(exc, 160))
            return None
        log.info("the %s answer was cut at the token limit; its whole items are kept", schema.__name__)
        self._tally(stats, "answers", "salvaged")
        return answer

    def _tally(self, stats: JSONStats, *fields: str) -> None:
        with self._usage_lock:
            for f in fields:
                setattr(stats, f, getattr(stats, f) + 1)

    # --- for subclasses ---------------------------------------------------------------------------
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
        """One request. ``purpose`` names the prompt in errors (the schema's name for JSON prompts). Returns the
        answer text, a ``CutAnswer`` when the server stopped at the token limit. Raises FormatRejected when the
        server refuses ``response_format``."""
        raise NotImplementedError

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
        """One request whose answer text comes in pieces as the server produces it (same errors as
        :meth:`_complete`); an answer cut at the token limit ends with a ``CutAnswer`` piece. This default sends
        one :meth:`_complete` request and yields its answer whole (a ``CutAnswer`` when cut)."""
        yield self._complete(
            messages,
            model=model,
            temperature=temperature,
            max_tokens=max_tokens,
            response_format=response_format,
            purpose=purpose,
        )

    def _forget(
        self,
        messages: Messages,
        *,
        model: str,
        temperature: float,
        max_tokens: int | None,
        response_format: dict[str, Any] | None,
    ) -> None:
        """Drop a cached answer (no-op without a cache)."""

    def _max(self, max_tokens: int | None) -> int | None:
        return max_tokens if max_tokens is not None else self.default_max_tokens

    def _resolve(self, model: str | None, temperature: float | None) -> tuple[str, float]:
        model = model or self.default_model
        if not model:
            raise LLMError("no LLM model given; set KBGRAPH_LLM_MODEL")
        return model, self.default_temperature if temperature is None else float(temperature)

    def _count(
        self, *, calls: int = 0, prompt: int = 0, completion: int = 0, seconds: float = 0.0, cached: int = 0
    ) -> None:
        tallies = [t for t in (r() for r in _TALLIES.get()) if t is not None]
        with self._usage_lock:
            for u in (self.usage, *(t.usage for t in tallies)):
                u.calls += calls
                u.prompt_tokens += prompt
                u.completion_tokens += completion
                u.seconds += seconds
                u.cached_calls += cached


#: Characters of an unusable answer the repair request quotes back. A cut answer is as long as its token budget
#: (954 tokens for AtomicQuestions): quoted whole, the repair of a table chunk's answer overflowed SmolLM2's
#: 4,096-token context and failed the document. The beginning shows the model what it wrote.
REPAIR_ECHO_CHARS = 1200


def echoed(text: str) -> str:
    """``text`` as the repair request quotes it: at most ``REPAIR_ECHO_CHARS`` characters, then a note of how
    many more there were."""
    if len(text) <= REPAIR_ECHO_CHARS:
        return text
    return f"{text[:REPAIR_ECHO_CHARS]} [... {len(text) - REPAIR_ECHO_CHARS} more characters]"


class FormatRejected(Exception):
    """The server refused the request's ``response_format`` (internal: BaseLLM falls back to the next mode)."""
