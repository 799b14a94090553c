"""Chat completions against any OpenAI-compatible server (OpenAI, Azure OpenAI's /openai/v1 endpoint,
vLLM, Ollama, llama.cpp server, ...).

* :class:`BaseLLM` holds everything that does not talk to a server: default model/temperature, the JSON
  prompt, extraction and pydantic validation of JSON answers, and the one repair retry. Both
  :class:`OpenAIClient` and :class:`kbgraph.llm.fake.ScriptedLLM` inherit it, so tests exercise the real
  JSON handling.
* :class:`OpenAIClient` adds the ``openai`` client (imported lazily: ``import kbgraph.llm`` stays cheap),
  tenacity retries on 429 / 5xx / timeouts / connection errors, the on-disk response cache and token
  accounting.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from kbgraph.errors import LLMContextError, LLMError
from kbgraph.llm.cache import ResponseCache, cache_key
from kbgraph.llm.json_answers import (  # noqa: F401 - re-exported: kbgraph.llm.client was their home
    JSON_INSTRUCTIONS,
    REPAIR_PROMPT,
    JSONAnswerError,
    describe_error,
    extract_json,
    one_line,
    parse_json_answer,
    with_json_instructions,
)
from kbgraph.llm.structured import MODES, FormatMemory, JSONStats, Mode, is_rejection, mode_of, next_mode, response_format

if TYPE_CHECKING:
    from kbgraph.settings import Settings

log = logging.getLogger(__name__)

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


@runtime_checkable
class LLM(Protocol):
    usage: Usage

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> str: ...

    def complete_json(
        self,
        messages: list[dict[str, str]],
        schema: type[M],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> M: ...


def usable_json(llm: LLM, messages: list[dict[str, str]], schema: type[M]) -> tuple[M | None, str]:
    """``llm.complete_json(messages, schema)`` where an unusable answer is an expected outcome: returns
    (the validated answer, "") or (None, why) when the answer is not valid ``schema`` JSON even after the
    one repair request. Errors of the server itself (unreachable, 401, ...: an LLMError not caused by the
    answer) propagate."""
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
            [dict(m) for m in messages], model=model, temperature=temperature, max_tokens=self._max(max_tokens),
            response_format=None, purpose="completion",
        )  # fmt: skip

    def complete_json(
        self,
        messages: list[dict[str, str]],
        schema: type[M],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> M:
        """A ``schema`` instance from the model's answer: the schema in the system message and, where the
        endpoint takes it, in ``response_format``; one repair request when the answer does not validate.
        Raises LLMError when the repaired answer is still unusable (its cause a ValueError) or the server
        fails; LLMContextError when the prompt does not fit the server's context."""
        model, temperature = self._resolve(model, temperature)
        params: dict[str, Any] = {"model": model, "temperature": temperature, "max_tokens": self._max(max_tokens)}
        stats = self._stats(schema)
        first = with_json_instructions(messages, schema)
        text, fmt = self._send_json(first, schema, params)
        try:
            answer = parse_json_answer(text, schema)
            self._tally(stats, "answers")
            return answer
        except ValueError as exc:
            error = describe_error(exc)
        log.info("LLM answer is not a valid %s (%s); asking for a repair", schema.__name__, error)
        repair = first + [
            {"role": "assistant", "content": text},
            {"role": "user", "content": REPAIR_PROMPT.format(error=error)},
        ]
        text = self._complete(repair, **params, response_format=fmt, purpose=f"{schema.__name__} repair")
        try:
            answer = parse_json_answer(text, schema)
            self._tally(stats, "answers", "repaired")
            return answer
        except ValueError as exc:
            self._tally(stats, "failed")
            # Keep neither bad answer: the next run asks the server again instead of replaying the failure.
            self._forget(first, **params, response_format=fmt)
            self._forget(repair, **params, response_format=fmt)
            raise LLMError(
                f"the LLM ({model}) gave no valid {schema.__name__} JSON even after a repair request "
                f"({one_line(describe_error(exc), 200)}); try a stronger model (KBGRAPH_LLM_MODEL)"
            ) from exc

    def json_report(self) -> dict[str, dict[str, float]]:
        """Per prompt (schema name): answers, repaired, failed and the share that needed a repair."""
        with self._usage_lock:
            return {
                name: {**s.model_dump(), "repair_share": round(s.repair_share, 4)}
                for name, s in sorted(self.json_stats.items())
            }

    # --- structured outputs -------------------------------------------------------------------------
    def _send_json(
        self, messages: Messages, schema: type[BaseModel], params: dict[str, Any]
    ) -> tuple[str, dict[str, Any] | None]:
        """Send a JSON request in the endpoint's mode; in ``auto``, fall back on a rejected mode and remember
        the first one answered. Returns (answer text, the response_format used)."""
        auto = self.response_format_mode == "auto"
        mode: Mode = (self._formats.get(self._memory_key(params["model"])) or MODES[0]) if auto else (
            self.response_format_mode if self.response_format_mode in MODES else "none")  # type: ignore[assignment]
        while True:
            fmt = response_format(mode, schema)
            try:
                text = self._complete(messages, **params, response_format=fmt, purpose=schema.__name__)
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

    def _memory_key(self, model: str) -> str:
        return f"{self.endpoint}|{model}"

    def _stats(self, schema: type[BaseModel]) -> JSONStats:
        with self._usage_lock:
            return self.json_stats.setdefault(schema.__name__, JSONStats())

    def _tally(self, stats: JSONStats, *fields: str) -> None:
        with self._usage_lock:
            for f in fields:
                setattr(stats, f, getattr(stats, f) + 1)

    # --- for subclasses ---------------------------------------------------------------------------
    def _complete(
        self, messages: Messages, *, model: str, temperature: float, max_tokens: int | None,
        response_format: dict[str, Any] | None, purpose: str,
    ) -> str:  # fmt: skip
        """One request. ``purpose`` names the prompt in errors (the schema's name for JSON prompts). Raises
        FormatRejected when the server refuses ``response_format``."""
        raise NotImplementedError

    def _forget(
        self, messages: Messages, *, model: str, temperature: float, max_tokens: int | None,
        response_format: dict[str, Any] | None,
    ) -> None:  # fmt: skip
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
        with self._usage_lock:
            u = self.usage
            u.calls += calls
            u.prompt_tokens += prompt
            u.completion_tokens += completion
            u.seconds += seconds
            u.cached_calls += cached


class FormatRejected(Exception):
    """The server refused the request's ``response_format`` (internal: BaseLLM falls back to the next mode)."""


# --- the real client ---------------------------------------------------------------------------------


class OpenAIClient(BaseLLM):
    """An LLM behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    ``retry_wait`` is the exponential-backoff multiplier in seconds (waits of about 1x, 2x, 4x, ... up
    to ``retry_max_wait``); tests pass a tiny one. The openai client's own retries are off: tenacity is
    the only retry layer, with ``settings.llm_max_retries`` retries.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        cache: bool = True,
        retry_wait: float = 1.0,
        retry_max_wait: float = 30.0,
    ) -> None:
        super().__init__()
        import openai  # lazily: a second of import time that offline commands do not need

        self._openai = openai
        self.settings = settings
        self.default_model = settings.llm_model
        self.default_temperature = settings.llm_temperature
        self.response_format_mode = settings.llm_response_format
        self.default_max_tokens = settings.llm_max_tokens
        self.base_url = settings.llm_base_url
        self.endpoint = self.base_url or "api.openai.com"
        self.timeout = settings.llm_timeout
        self.max_retries = settings.llm_max_retries
        self.retry_wait = retry_wait
        self.retry_max_wait = retry_max_wait
        api_key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else ""
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or "not-needed",  # local servers need none; the openai client insists on one
            timeout=self.timeout,
            max_retries=0,
        )
        folder = settings.llm_cache_dir if settings.llm_cache_dir is not None else settings.home / "llm-cache"
        self._formats = FormatMemory(folder)  # which response_format each endpoint answered
        self.cache: ResponseCache | None = ResponseCache(folder) if cache else None

    @property
    def where(self) -> str:
        return self.base_url or "api.openai.com"

    def close(self) -> None:
        self._client.close()

    # --- one request ------------------------------------------------------------------------------
    def _complete(
        self, messages: Messages, *, model: str, temperature: float, max_tokens: int | None,
        response_format: dict[str, Any] | None, purpose: str,
    ) -> str:  # fmt: skip
        key = None
        if self.cache is not None:
            key = cache_key(
                model=model, messages=messages, temperature=temperature, max_tokens=max_tokens,
                response_format=mode_of(response_format),
            )  # fmt: skip
            hit = self.cache.get(key)
            if hit is not None:
                self._count(cached=1)
                return hit

        request: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        if response_format is not None:
            request["response_format"] = response_format

        start = time.perf_counter()
        try:
            response = self._retrying()(self._client.chat.completions.create, **request)
        except self._openai.OpenAIError as exc:
            status = getattr(exc, "status_code", None)
            detail = _error_detail(exc)
            if response_format is not None and is_rejection(status, detail):
                raise FormatRejected(f"{status}: {one_line(detail, 160)}") from exc
            if _unparsable_output(status, detail):
                # llama-server could not parse the model's output as the requested format: an unusable answer
                raise LLMError(
                    f"the LLM server at {self.where} could not use the model's answer to the {purpose} prompt "
                    f"({one_line(detail, 160)})"
                ) from JSONAnswerError(detail)
            context = _context_overflow(exc)
            if context is not None:
                raise self._context_error(context, messages, purpose, model) from exc
            raise self._error(exc, model, response_format is not None) from exc
        finally:
            self._count(seconds=time.perf_counter() - start)

        if not response.choices:
            raise LLMError(f"the LLM server at {self.where} returned no choices for model {model!r}")
        text = response.choices[0].message.content or ""
        usage = response.usage
        self._count(
            calls=1,
            prompt=(usage.prompt_tokens or 0) if usage else 0,
            completion=(usage.completion_tokens or 0) if usage else 0,
        )
        if key is not None:
            self.cache.put(key, model, text)  # type: ignore[union-attr]
        return text

    def _forget(
        self, messages: Messages, *, model: str, temperature: float, max_tokens: int | None,
        response_format: dict[str, Any] | None,
    ) -> None:  # fmt: skip
        if self.cache is not None:
            self.cache.delete(
                cache_key(
                    model=model, messages=messages, temperature=temperature, max_tokens=max_tokens,
                    response_format=mode_of(response_format),
                )
            )

    def _context_error(self, found: dict[str, int | None], messages: Messages, purpose: str, model: str) -> LLMContextError:
        """LLMContextError naming the prompt, its token count (the server's, else estimated) and the context."""
        tokens = found.get("prompt_tokens")
        if tokens is None:
            words = sum(len(str(m.get("content", "")).split()) for m in messages)
            size = f"about {round(words * 1.3):,} tokens (estimated)"
        else:
            size = f"{tokens:,} tokens"
        ctx = found.get("context")
        limit = f" of {ctx:,} tokens" if ctx else ""
        return LLMContextError(
            f"the {purpose} prompt has {size}, more than the context{limit} of model {model!r} at {self.where}; "
            "use a model or server with a larger context (kbgraph llm start --ctx N), or lower "
            "KBGRAPH_CHUNK_TOKENS / KBGRAPH_LLM_CHUNK_WINDOW_TOKENS"
        )

    # --- retries and errors ---------------------------------------------------------------------------
    def _retrying(self) -> Callable[..., Any]:
        """A fresh tenacity Retrying (one per request: its state is per call)."""
        from tenacity import Retrying, before_sleep_log, stop_after_attempt, wait_exponential

        openai = self._openai
        transient = (
            openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError, openai.APIConnectionError
        )
        backoff = wait_exponential(multiplier=self.retry_wait, max=self.retry_max_wait)

        def retry(state: Any) -> bool:
            exc = state.outcome.exception() if state.outcome else None
            if not isinstance(exc, transient):
                return False
            status, detail = getattr(exc, "status_code", None), _error_detail(exc)
            if is_rejection(status, detail) or _context_overflow(exc) or _unparsable_output(status, detail):
                return False  # a refused response_format or an over-long prompt: waiting does not help
            # An exhausted quota is a 429 too, but waiting does not fix it.
            return getattr(exc, "code", None) != "insufficient_quota"

        def wait(state: Any) -> float:
            seconds = backoff(state)
            exc = state.outcome.exception() if state.outcome else None
            after = _retry_after(exc)
            if after is not None:
                seconds = max(seconds, min(after, self.retry_max_wait))
            return seconds

        return Retrying(
            retry=retry,
            wait=wait,
            stop=stop_after_attempt(self.max_retries + 1),
            before_sleep=before_sleep_log(log, logging.WARNING),
            reraise=True,
        )

    def _error(self, exc: Exception, model: str, json_mode: bool) -> LLMError:
        """The one-line LLMError for a failed request (``json_mode``: a response_format was sent)."""
        o = self._openai
        attempts = f"after {self.max_retries + 1} attempt{'s' if self.max_retries else ''}"
        detail = one_line(getattr(exc, "message", None) or str(exc), 200)
        where = self.where
        if isinstance(exc, o.AuthenticationError):
            msg = f"the LLM server at {where} rejected the API key (401); check KBGRAPH_LLM_API_KEY"
        elif isinstance(exc, o.PermissionDeniedError):
            msg = (
                f"the LLM server at {where} refused model {model!r} (403); "
                "check KBGRAPH_LLM_API_KEY and KBGRAPH_LLM_MODEL"
            )
        elif isinstance(exc, o.NotFoundError):
            msg = (
                f"model {model!r} or the chat endpoint was not found at {where} (404); check KBGRAPH_LLM_MODEL "
                "and KBGRAPH_LLM_BASE_URL (usually ends in /v1)"
            )
        elif isinstance(exc, o.RateLimitError):
            if getattr(exc, "code", None) == "insufficient_quota":
                msg = f"the LLM account at {where} is out of quota (429); check billing or KBGRAPH_LLM_API_KEY"
            else:
                msg = (
                    f"the LLM server at {where} is still rate-limiting (429) {attempts}; "
                    "wait, or raise KBGRAPH_LLM_MAX_RETRIES"
                )
        elif isinstance(exc, o.InternalServerError):
            msg = f"the LLM server at {where} failed ({exc.status_code}) {attempts}: {detail}; try again later"
        elif isinstance(exc, o.APITimeoutError):
            msg = (
                f"no answer from the LLM server at {where} within {self.timeout:g} s {attempts}; "
                "raise KBGRAPH_LLM_TIMEOUT"
            )
        elif isinstance(exc, o.APIConnectionError):
            msg = (
                f"cannot reach the LLM server at {where} {attempts}; "
                "check KBGRAPH_LLM_BASE_URL and that the server runs"
            )
        elif isinstance(exc, o.BadRequestError):
            fix = "set KBGRAPH_LLM_RESPONSE_FORMAT=none" if json_mode else "check KBGRAPH_LLM_MODEL"
            msg = f"the LLM server at {where} rejected the request (400: {detail}); {fix}"
        elif isinstance(exc, o.APIStatusError):
            msg = f"the LLM server at {where} answered {exc.status_code}: {detail}; check KBGRAPH_LLM_BASE_URL"
        else:
            msg = f"the LLM request to {where} failed: {detail}"
        return LLMError(one_line(msg, 400))


def _error_detail(exc: BaseException) -> str:
    """The server's error message: the body's ``message`` (or ``error.message``), else the exception text."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error") if isinstance(body.get("error"), dict) else body
        msg = inner.get("message") or inner.get("detail")
        if msg:
            return str(msg)
    return str(getattr(exc, "message", None) or exc)


_CTX_WORDS = re.compile(r"context (?:size|length|window)|exceeds? the (?:available )?context|too many tokens|"
                        r"maximum context length|context_length_exceeded|exceed_context", re.IGNORECASE)
_NUMS = re.compile(r"\d[\d,]*")


def _context_overflow(exc: BaseException) -> dict[str, int | None] | None:
    """{"prompt_tokens", "context"} when the error says the prompt does not fit the context, else None.
    llama.cpp's server sends ``n_prompt_tokens`` and ``n_ctx`` in the error body; llama-cpp-python says
    "Requested tokens (N) exceed context window of M"; OpenAI "maximum context length is M tokens. However,
    your messages resulted in N tokens"."""
    if getattr(exc, "status_code", None) not in (400, 413, 422, 500):
        return None
    body = getattr(exc, "body", None)
    inner = body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), dict) else body
    inner = inner if isinstance(inner, dict) else {}
    text = " ".join(str(x) for x in (_error_detail(exc), inner.get("type", ""), inner.get("code", "")))
    if not _CTX_WORDS.search(text):
        return None
    prompt, ctx = inner.get("n_prompt_tokens"), inner.get("n_ctx")
    if prompt is None:
        nums = [int(n.replace(",", "")) for n in _NUMS.findall(_error_detail(exc))]
        m = re.search(r"Requested tokens \((\d+)\) exceed context window of (\d+)", text)
        if m:
            prompt, ctx = int(m.group(1)), int(m.group(2))
        elif re.search(r"maximum context length is", text) and len(nums) >= 2:
            ctx, prompt = nums[0], nums[1]
    return {"prompt_tokens": int(prompt) if prompt is not None else None, "context": int(ctx) if ctx else None}


def _unparsable_output(status: int | None, detail: str) -> bool:
    """llama.cpp's server answers 500 "The model produced output that does not match the expected ...
    format" when the model's text cannot be parsed as its chat format; deterministic at temperature 0."""
    return status == 500 and "does not match the expected" in (detail or "")


def _retry_after(exc: BaseException | None) -> float | None:
    """Seconds from a Retry-After / retry-after-ms header of an error response, if any."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        if headers.get("retry-after-ms"):
            return float(headers["retry-after-ms"]) / 1000.0
        if headers.get("retry-after"):
            return float(headers["retry-after"])
    except (TypeError, ValueError):
        return None  # an HTTP date: fall back to the exponential backoff
    return None


def get_llm(settings: Settings, **kwargs: Any) -> LLM | None:
    """The configured LLM, or None (offline mode) when no model is set, or neither a base URL nor an API
    key (api.openai.com needs the key). ``kwargs`` go to :class:`OpenAIClient`."""
    if not settings.llm_model:
        return None
    if not settings.llm_base_url and not (settings.llm_api_key and settings.llm_api_key.get_secret_value()):
        return None
    return OpenAIClient(settings, **kwargs)
