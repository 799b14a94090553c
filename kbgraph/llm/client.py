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

import json
import logging
import re
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ValidationError

from kbgraph.errors import LLMError
from kbgraph.llm.cache import ResponseCache, cache_key

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


# --- JSON answers ----------------------------------------------------------------------------------

JSON_INSTRUCTIONS = (
    "Answer with a JSON object only: no prose before or after it, no Markdown. "
    "The object must validate against this JSON schema:\n{schema}"
)
REPAIR_PROMPT = (
    "Your previous answer could not be used: {error}\n"
    "Reply with only the corrected JSON object that validates against the schema, no other text."
)

_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:json[c5]?|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)


class JSONAnswerError(ValueError):
    """The answer text holds no JSON object."""


def extract_json(text: str) -> str:
    """The JSON object in an answer: drops <think>...</think> blocks, prefers the content of a ```json
    fence, and takes the outermost {...}. Raises JSONAnswerError when there is no object."""
    text = _THINK.sub("", text or "")
    for fenced in _FENCE.findall(text):
        if "{" in fenced:
            text = fenced
            break
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise JSONAnswerError("the answer contains no JSON object ({...})")
    return text[start : end + 1]


def parse_json_answer(text: str, schema: type[M]) -> M:
    """Extract, parse and validate. Raises ValueError (JSONAnswerError, json.JSONDecodeError or
    pydantic.ValidationError, all ValueError subclasses)."""
    obj = json.loads(extract_json(text))
    return schema.model_validate(obj)


def describe_error(exc: Exception) -> str:
    """A short, model-readable description of why an answer was rejected."""
    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors()[:10]:
            loc = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
            parts.append(f"{loc}: {err.get('msg', 'invalid')}")
        more = exc.error_count() - len(parts)
        return "schema validation failed: " + "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    return str(exc)


def with_json_instructions(messages: Messages, schema: type[BaseModel]) -> Messages:
    """The messages with the JSON instructions and schema in the system message (merged into an existing
    leading system message: some chat templates allow only one, and only first)."""
    instructions = JSON_INSTRUCTIONS.format(schema=json.dumps(schema.model_json_schema(), ensure_ascii=False))
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0].get('content', '')}\n\n{instructions}".lstrip()
    else:
        out.insert(0, {"role": "system", "content": instructions})
    return out


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class BaseLLM:
    """The server-independent half of an LLM client. Subclasses implement :meth:`_complete`."""

    usage: Usage
    default_model: str | None = None
    default_temperature: float = 0.0
    json_mode: bool = False  # send response_format={"type": "json_object"} for JSON answers

    def __init__(self) -> None:
        self.usage = Usage()
        self._usage_lock = threading.Lock()

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
            [dict(m) for m in messages], model=model, temperature=temperature, max_tokens=max_tokens, json_mode=False
        )

    def complete_json(
        self,
        messages: list[dict[str, str]],
        schema: type[M],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> M:
        model, temperature = self._resolve(model, temperature)
        params: dict[str, Any] = {
            "model": model, "temperature": temperature, "max_tokens": max_tokens, "json_mode": self.json_mode
        }
        first = with_json_instructions(messages, schema)
        text = self._complete(first, **params)
        try:
            return parse_json_answer(text, schema)
        except ValueError as exc:
            error = describe_error(exc)
        log.info("LLM answer is not a valid %s (%s); asking for a repair", schema.__name__, error)
        repair = first + [
            {"role": "assistant", "content": text},
            {"role": "user", "content": REPAIR_PROMPT.format(error=error)},
        ]
        text = self._complete(repair, **params)
        try:
            return parse_json_answer(text, schema)
        except ValueError as exc:
            # Keep neither bad answer: the next run asks the server again instead of replaying the failure.
            self._forget(first, **params)
            self._forget(repair, **params)
            raise LLMError(
                f"the LLM ({model}) gave no valid {schema.__name__} JSON even after a repair request "
                f"({one_line(describe_error(exc), 200)}); try a stronger model (KBGRAPH_LLM_MODEL)"
            ) from exc

    # --- for subclasses ---------------------------------------------------------------------------
    def _complete(
        self, messages: Messages, *, model: str, temperature: float, max_tokens: int | None, json_mode: bool
    ) -> str:
        raise NotImplementedError

    def _forget(
        self, messages: Messages, *, model: str, temperature: float, max_tokens: int | None, json_mode: bool
    ) -> None:
        """Drop a cached answer (no-op without a cache)."""

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
        self.json_mode = settings.llm_json_mode
        self.base_url = settings.llm_base_url
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
        self.cache: ResponseCache | None = None
        if cache:
            folder = settings.llm_cache_dir if settings.llm_cache_dir is not None else settings.home / "llm-cache"
            self.cache = ResponseCache(folder)

    @property
    def where(self) -> str:
        return self.base_url or "api.openai.com"

    def close(self) -> None:
        self._client.close()

    # --- one request ------------------------------------------------------------------------------
    def _complete(
        self, messages: Messages, *, model: str, temperature: float, max_tokens: int | None, json_mode: bool
    ) -> str:
        key = None
        if self.cache is not None:
            key = cache_key(
                model=model, messages=messages, temperature=temperature, max_tokens=max_tokens, json_mode=json_mode
            )
            hit = self.cache.get(key)
            if hit is not None:
                self._count(cached=1)
                return hit

        request: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        if json_mode:
            request["response_format"] = {"type": "json_object"}

        start = time.perf_counter()
        try:
            response = self._retrying()(self._client.chat.completions.create, **request)
        except self._openai.OpenAIError as exc:
            raise self._error(exc, model, json_mode) from exc
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
        self, messages: Messages, *, model: str, temperature: float, max_tokens: int | None, json_mode: bool
    ) -> None:
        if self.cache is not None:
            self.cache.delete(
                cache_key(
                    model=model, messages=messages, temperature=temperature, max_tokens=max_tokens, json_mode=json_mode
                )
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
            fix = "set KBGRAPH_LLM_JSON_MODE=false" if json_mode else "check KBGRAPH_LLM_MODEL"
            msg = f"the LLM server at {where} rejected the request (400: {detail}); {fix}"
        elif isinstance(exc, o.APIStatusError):
            msg = f"the LLM server at {where} answered {exc.status_code}: {detail}; check KBGRAPH_LLM_BASE_URL"
        else:
            msg = f"the LLM request to {where} failed: {detail}"
        return LLMError(one_line(msg, 400))


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
