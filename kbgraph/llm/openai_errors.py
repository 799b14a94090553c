"""Reading the errors of an OpenAI-compatible server: the server's own message, a prompt over the context
window, llama.cpp's "unparsable output" answer, Retry-After headers, and the one-line LLMError message (with
its fix) for each failure class of the ``openai`` package. Used by :class:`kbgraph.llm.client.OpenAIClient`.
"""

from __future__ import annotations

import re
from typing import Any

from kbgraph.text import one_line

__all__ = ["context_overflow", "error_detail", "failure_message", "retry_after", "unparsable_output"]


def error_detail(exc: BaseException) -> str:
    """The server's error message: the body's ``message`` (or ``error.message``), else the exception text."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        inner = error if isinstance(error, dict) else body
        msg = inner.get("message") or inner.get("detail")
        if msg:
            return str(msg)
    return str(getattr(exc, "message", None) or exc)


_CTX_WORDS = re.compile(
    r"context (?:size|length|window)|exceeds? the (?:available )?context|too many tokens|"
    r"maximum context length|context_length_exceeded|exceed_context",
    re.IGNORECASE,
)
_NUMS = re.compile(r"\d[\d,]*")


def context_overflow(exc: BaseException) -> dict[str, int | None] | None:
    """{"prompt_tokens", "context"} when the error says the prompt does not fit the context, else None.
    llama.cpp's server sends ``n_prompt_tokens`` and ``n_ctx`` in the error body; llama-cpp-python says
    "Requested tokens (N) exceed context window of M"; OpenAI "maximum context length is M tokens. However,
    your messages resulted in N tokens"."""
    if getattr(exc, "status_code", None) not in (400, 413, 422, 500):
        return None
    body = getattr(exc, "body", None)
    inner = body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), dict) else body
    inner = inner if isinstance(inner, dict) else {}
    text = " ".join(str(x) for x in (error_detail(exc), inner.get("type", ""), inner.get("code", "")))
    if not _CTX_WORDS.search(text):
        return None
    prompt, ctx = inner.get("n_prompt_tokens"), inner.get("n_ctx")
    if prompt is None:
        nums = [int(n.replace(",", "")) for n in _NUMS.findall(error_detail(exc))]
        m = re.search(r"Requested tokens \((\d+)\) exceed context window of (\d+)", text)
        if m:
            prompt, ctx = int(m.group(1)), int(m.group(2))
        elif re.search(r"maximum context length is", text) and len(nums) >= 2:
            ctx, prompt = nums[0], nums[1]
    return {"prompt_tokens": int(prompt) if prompt is not None else None, "context": int(ctx) if ctx else None}


def unparsable_output(status: int | None, detail: str) -> bool:
    """llama.cpp's server answers 500 "The model produced output that does not match the expected ...
    format" when the model's text cannot be parsed as its chat format; deterministic at temperature 0."""
    return status == 500 and "does not match the expected" in (detail or "")


def retry_after(exc: BaseException | None) -> float | None:
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


def failure_message(
    openai: Any, exc: Exception, *, where: str, model: str, json_mode: bool, max_retries: int, timeout: float
) -> str:
    """The one-line message (at most 400 characters) of a failed request, naming the fix.

    ``openai``: the ``openai`` module (its exception classes); ``where``: the endpoint; ``json_mode``: a
    response_format was sent; ``max_retries``: the retries made after the first attempt; ``timeout``: the
    request timeout in seconds."""
    attempts = f"after {max_retries + 1} attempt{'s' if max_retries else ''}"
    detail = one_line(getattr(exc, "message", None) or str(exc), 200)
    status = getattr(exc, "status_code", None)
    if isinstance(exc, openai.RateLimitError) and getattr(exc, "code", None) == "insufficient_quota":
        return one_line(f"the LLM account at {where} is out of quota (429); check billing or KBGRAPH_LLM_API_KEY", 400)
    fix = "set KBGRAPH_LLM_RESPONSE_FORMAT=none" if json_mode else "check KBGRAPH_LLM_MODEL"
    by_class = (  # most specific first: every class below is an APIStatusError or an APIConnectionError
        (
            openai.AuthenticationError,
            f"the LLM server at {where} rejected the API key (401); check KBGRAPH_LLM_API_KEY",
        ),
        (
            openai.PermissionDeniedError,
            f"the LLM server at {where} refused model {model!r} (403); check KBGRAPH_LLM_API_KEY and KBGRAPH_LLM_MODEL",
        ),
        (
            openai.NotFoundError,
            f"model {model!r} or the chat endpoint was not found at {where} (404); check KBGRAPH_LLM_MODEL "
            "and KBGRAPH_LLM_BASE_URL (usually ends in /v1)",
        ),
        (
            openai.RateLimitError,
            f"the LLM server at {where} is still rate-limiting (429) {attempts}; wait, or raise KBGRAPH_LLM_MAX_RETRIES",
        ),
        (
            openai.InternalServerError,
            f"the LLM server at {where} failed ({status}) {attempts}: {detail}; try again later",
        ),
        (
            openai.APITimeoutError,
            f"no answer from the LLM server at {where} within {timeout:g} s {attempts}; raise KBGRAPH_LLM_TIMEOUT",
        ),
        (
            openai.APIConnectionError,
            f"cannot reach the LLM server at {where} {attempts}; check KBGRAPH_LLM_BASE_URL and that the server runs",
        ),
        (openai.BadRequestError, f"the LLM server at {where} rejected the request (400: {detail}); {fix}"),
        (openai.APIStatusError, f"the LLM server at {where} answered {status}: {detail}; check KBGRAPH_LLM_BASE_URL"),
    )
    msg = next((text for cls, text in by_class if isinstance(exc, cls)), f"the LLM request to {where} failed: {detail}")
    return one_line(msg, 400)
