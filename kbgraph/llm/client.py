"""Chat completions against any OpenAI-compatible server (OpenAI, Azure OpenAI's /openai/v1 endpoint,
vLLM, Ollama, llama.cpp server, ...).

:class:`OpenAIClient` adds to :class:`kbgraph.llm.base.BaseLLM` (the JSON prompt, validation and repair
retry, shared with the scripted fake) the ``openai`` client (imported lazily: ``import kbgraph.llm`` stays
cheap), tenacity retries on 429 / 5xx / timeouts / connection errors, the on-disk response cache and token
accounting; :func:`get_llm` builds it from the settings, or returns None for offline use. The server's errors
are read by ``kbgraph.llm.openai_errors``.

This module is also where callers import the base names from (``BaseLLM``, ``LLM``, ``Usage``,
``usable_json``, and the JSON helpers of ``kbgraph.llm.json_answers``): they are re-exported here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, NoReturn

from kbgraph.errors import LLMContextError, LLMError
from kbgraph.home import LLM_CACHE
from kbgraph.llm.base import (  # noqa: F401 - re-exported: kbgraph.llm.client was their home
    LLM,
    BaseLLM,
    FormatRejected,
    Messages,
    Usage,
    usable_json,
)
from kbgraph.llm.cache import ResponseCache, cache_key
from kbgraph.llm.limit import EndpointLimit, endpoint_limit
from kbgraph.llm.json_answers import (  # noqa: F401 - re-exported: kbgraph.llm.client was their home
    JSON_INSTRUCTIONS,
    REPAIR_PROMPT,
    CutAnswer,
    JSONAnswerError,
    cut_answer,
    describe_error,
    extract_json,
    parse_json_answer,
    with_json_instructions,
)
from kbgraph.llm.openai_errors import context_overflow, error_detail, failure_message, retry_after, unparsable_output
from kbgraph.llm.structured import FormatMemory, is_rejection, mode_of
from kbgraph.text import one_line

if TYPE_CHECKING:
    from kbgraph.settings import Settings

log = logging.getLogger(__name__)


class OpenAIClient(BaseLLM):
    """An LLM behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    ``retry_wait`` is the exponential-backoff multiplier in seconds (waits of about 1x, 2x, 4x, ... up
    to ``retry_max_wait``); tests pass a tiny one. The openai client's own retries are off: tenacity is
    the only retry layer, with ``settings.llm.llm_max_retries`` retries.
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
        self.default_model = settings.llm.llm_model
        self.default_temperature = settings.llm.llm_temperature
        self.response_format_mode = settings.llm.llm_response_format
        self.default_max_tokens = settings.llm.llm_max_tokens
        self.base_url = settings.llm.llm_base_url
        self.endpoint = self.base_url or "api.openai.com"
        self.timeout = settings.llm.llm_timeout
        self.max_retries = settings.llm.llm_max_retries
        self.retry_wait = retry_wait
        self.retry_max_wait = retry_max_wait
        api_key = settings.llm.llm_api_key.get_secret_value() if settings.llm.llm_api_key else ""
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or "not-needed",  # local servers need none; the openai client insists on one
            timeout=self.timeout,
            max_retries=0,
        )
        folder = settings.llm.llm_cache_dir if settings.llm.llm_cache_dir is not None else settings.home / LLM_CACHE
        self._formats = FormatMemory(folder)  # which response_format each endpoint answered
        self.cache: ResponseCache | None = ResponseCache(folder) if cache else None
        self._stream_usage = True  # send stream_options.include_usage (False once the server refused it)
        self._limit: EndpointLimit | None = None  # llm_max_concurrency, shared per endpoint (first request)

    @property
    def limit(self) -> EndpointLimit:
        """The bound on requests in flight to this endpoint, shared by the process's clients (kbgraph.llm.limit):
        each request (retries and a streamed answer's reading included) holds one of its slots."""
        if self._limit is None:
            self._limit = endpoint_limit(self.settings)
        return self._limit

    @property
    def where(self) -> str:
        return self.base_url or "api.openai.com"

    def close(self) -> None:
        self._client.close()

    # --- one request ------------------------------------------------------------------------------
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
        key, hit = self._cached(messages, model, temperature, max_tokens, response_format)
        if hit is not None:
            return hit
        request = _request(messages, model, temperature, max_tokens, response_format)
        start = time.perf_counter()
        try:
            with self.limit.slot():
                response = self._retrying()(self._client.chat.completions.create, **request)
        except self._openai.OpenAIError as exc:
            self._raise(exc, messages, purpose, model, response_format)
        finally:
            self._count(seconds=time.perf_counter() - start)

        if not response.choices:
            raise LLMError(f"the LLM server at {self.where} returned no choices for model {model!r}")
        text = response.choices[0].message.content or ""
        if getattr(response.choices[0], "finish_reason", None) == "length":
            log.info("the %s answer was cut at max_tokens %s", purpose, max_tokens)
            text = cut_answer(text, max_tokens)
        usage = response.usage
        self._count(
            calls=1,
            prompt=(usage.prompt_tokens or 0) if usage else 0,
            completion=(usage.completion_tokens or 0) if usage else 0,
        )
        if key is not None:
            self.cache.put(key, model, text)  # type: ignore[union-attr]
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
        """The answer in pieces as the server sends them (``stream=True``; ``stream_options.include_usage`` for
        the token counts, dropped for a server that refuses it). A cached answer comes as one piece; the whole
        answer is cached once complete. The request is retried as :meth:`_complete`'s until the stream starts;
        an error after that raises LLMError (a half answer is not cached)."""
        import httpx  # the openai client's transport

        key, hit = self._cached(messages, model, temperature, max_tokens, response_format)
        if hit is not None:
            yield hit
            return
        request = {**_request(messages, model, temperature, max_tokens, response_format), "stream": True}
        if self._stream_usage:
            request["stream_options"] = {"include_usage": True}
        parts: list[str] = []
        usage, choices, finish = None, False, None
        start = time.perf_counter()
        try:
            with self.limit.slot():  # held while the answer is read
                stream = self._open_stream(request, messages, purpose, model, response_format)
                with stream:
                    for chunk in stream:
                        usage = getattr(chunk, "usage", None) or usage
                        for choice in chunk.choices[:1]:
                            choices = True
                            finish = getattr(choice, "finish_reason", None) or finish
                            piece = getattr(choice.delta, "content", None)
                            if piece:
                                parts.append(piece)
                                yield piece
        except (self._openai.OpenAIError, httpx.HTTPError) as exc:  # the stream broke off
            if isinstance(exc, self._openai.APIStatusError):
                self._raise(exc, messages, purpose, model, response_format)
            raise LLMError(
                f"the LLM server at {self.where} broke off its streamed answer to the {purpose} prompt "
                f"({type(exc).__name__}: {one_line(str(exc), 160)}); try again"
            ) from exc
        finally:
            self._count(seconds=time.perf_counter() - start)
        if not choices:
            raise LLMError(f"the LLM server at {self.where} returned no choices for model {model!r}")
        self._count(
            calls=1,
            prompt=(usage.prompt_tokens or 0) if usage else 0,
            completion=(usage.completion_tokens or 0) if usage else 0,
        )
        whole = cut_answer("".join(parts), max_tokens) if finish == "length" else "".join(parts)
        if key is not None:
            self.cache.put(key, model, whole)  # type: ignore[union-attr]
        if finish == "length":
            log.info("the %s answer was cut at max_tokens %s", purpose, max_tokens)
            yield cut_answer("", max_tokens)

    def _open_stream(
        self,
        request: dict[str, Any],
        messages: Messages,
        purpose: str,
        model: str,
        response_format: dict[str, Any] | None,
    ) -> Any:
        """The server's stream for ``request`` (retried as a plain request); without ``stream_options`` when
        the server refuses that field (remembered for this client)."""
        while True:
            try:
                return self._retrying()(self._client.chat.completions.create, **request)
            except self._openai.OpenAIError as exc:
                refused = isinstance(exc, self._openai.BadRequestError) and "stream_options" in error_detail(exc)
                if not refused or "stream_options" not in request:
                    self._raise(exc, messages, purpose, model, response_format)
                self._stream_usage = False
                request = {k: v for k, v in request.items() if k != "stream_options"}

    def _cached(
        self,
        messages: Messages,
        model: str,
        temperature: float,
        max_tokens: int | None,
        response_format: dict[str, Any] | None,
    ) -> tuple[str | None, str | None]:
        """(cache key or None without a cache, the cached answer or None); a hit is counted."""
        if self.cache is None:
            return None, None
        key = cache_key(
            model=model,
            messages=messages,
            temperature=temperature,
            max_tokens=max_tokens,
            response_format=mode_of(response_format),
        )
        hit = self.cache.get(key)
        if hit is not None:
            self._count(cached=1)
        return key, hit

    def _raise(
        self, exc: Exception, messages: Messages, purpose: str, model: str, response_format: dict[str, Any] | None
    ) -> NoReturn:
        """Raise the library error for a failed request: FormatRejected (the server refuses
        ``response_format``), LLMError caused by a JSONAnswerError (llama-server could not parse the model's
        output), LLMContextError, else the one-line LLMError of :meth:`_error`."""
        status = getattr(exc, "status_code", None)
        detail = error_detail(exc)
        if response_format is not None and is_rejection(status, detail):
            raise FormatRejected(f"{status}: {one_line(detail, 160)}") from exc
        if unparsable_output(status, detail):
            # llama-server could not parse the model's output as the requested format: an unusable answer
            raise LLMError(
                f"the LLM server at {self.where} could not use the model's answer to the {purpose} prompt "
                f"({one_line(detail, 160)})"
            ) from JSONAnswerError(detail)
        context = context_overflow(exc)
        if context is not None:
            raise self._context_error(context, messages, purpose, model) from exc
        raise self._error(exc, model, response_format is not None) from exc

    def _forget(
        self,
        messages: Messages,
        *,
        model: str,
        temperature: float,
        max_tokens: int | None,
        response_format: dict[str, Any] | None,
    ) -> None:
        if self.cache is not None:
            self.cache.delete(
                cache_key(
                    model=model,
                    messages=messages,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    response_format=mode_of(response_format),
                )
            )

    def _context_error(
        self, found: dict[str, int | None], messages: Messages, purpose: str, model: str
    ) -> LLMContextError:
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
            openai.RateLimitError,
            openai.InternalServerError,
            openai.APITimeoutError,
            openai.APIConnectionError,
        )
        backoff = wait_exponential(multiplier=self.retry_wait, max=self.retry_max_wait)

        def retry(state: Any) -> bool:
            exc = state.outcome.exception() if state.outcome else None
            if not isinstance(exc, transient):
                return False
            status, detail = getattr(exc, "status_code", None), error_detail(exc)
            if is_rejection(status, detail) or context_overflow(exc) or unparsable_output(status, detail):
                return False  # a refused response_format or an over-long prompt: waiting does not help
            # An exhausted quota is a 429 too, but waiting does not fix it.
            return getattr(exc, "code", None) != "insufficient_quota"

        def wait(state: Any) -> float:
            seconds = backoff(state)
            exc = state.outcome.exception() if state.outcome else None
            after = retry_after(exc)
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
        return LLMError(
            failure_message(
                self._openai,
                exc,
                where=self.where,
                model=model,
                json_mode=json_mode,
                max_retries=self.max_retries,
                timeout=self.timeout,
            )
        )


def _request(
    messages: Messages, model: str, temperature: float, max_tokens: int | None, response_format: dict[str, Any] | None
) -> dict[str, Any]:
    """The body of a chat-completions request."""
    request: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
    if max_tokens is not None:
        request["max_tokens"] = max_tokens
    if response_format is not None:
        request["response_format"] = response_format
    return request


def get_llm(settings: Settings, **kwargs: Any) -> LLM | None:
    """The configured LLM: an :class:`OpenAIClient` of ``settings.llm``.
    Args:
        settings: the settings (``llm_model``, ``llm_base_url``, ``llm_api_key``, ...).
        **kwargs: for :class:`OpenAIClient` (``cache``, ``retry_wait``, ``retry_max_wait``).
    Returns:
        The client, or None (offline mode) when no model is set, or neither a base URL nor an API key
        (api.openai.com needs the key).
    Raises:
        ImportError: the ``openai`` package is not installed (extra ``llm``)."""
    if not settings.llm.llm_model:
        return None
    if not settings.llm.llm_base_url and not (settings.llm.llm_api_key and settings.llm.llm_api_key.get_secret_value()):
        return None
    return OpenAIClient(settings, **kwargs)
