"""JSON answers from a chat model: the instructions that carry the pydantic schema in the prompt, extraction
of the JSON object from an answer (``<think>`` blocks of reasoning models and Markdown fences dropped),
validation, the complete part of an answer cut by the token limit (:func:`salvage_cut`), and the
model-readable description of why an answer was rejected (for the repair request). Used by :class:`kbgraph.llm.base.BaseLLM.complete_json` for every JSON-answering prompt."""

from __future__ import annotations

import json
import re
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

from kbgraph.llm.structured import sent_schema

M = TypeVar("M", bound=BaseModel)
Messages = list[dict[str, str]]

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


class CutAnswerError(JSONAnswerError):
    """The answer was cut by the token limit (the server's ``finish_reason`` "length") before its JSON was
    complete."""


class CutAnswer(str):
    """An answer text the server stopped at the token limit (``finish_reason`` "length"); ``max_tokens`` is the
    limit the request asked for (None: the server's own). The client returns it in place of a plain ``str``
    (a streamed answer ends with an empty ``CutAnswer`` piece); scripted tests return one to simulate a cut."""

    max_tokens: int | None = None


def cut_answer(text: str, max_tokens: int | None) -> CutAnswer:
    """``text`` marked as cut at ``max_tokens``."""
    out = CutAnswer(text)
    out.max_tokens = max_tokens
    return out


def cut_message(max_tokens: int | None) -> str:
    """Why a cut answer is unusable, for the repair request and the error."""
    limit = f"max_tokens {max_tokens}" if max_tokens is not None else "the server's token limit"
    return f"the answer was cut by the token limit ({limit}) before its JSON object was complete"


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


def salvage_cut(text: str, schema: type[M]) -> M:
    """The complete part of an answer cut by the token limit, when it is a whole answer: the JSON read by
    pydantic's partial parser (``pydantic_core.from_json(allow_partial=True)``: a string the cut left open is
    dropped), then the last value the cut may have left unfinished (the last item of the list the answer
    ended in, unless a string, which was closed) dropped too. Accepted only when every property of the schema
    sent (:func:`kbgraph.llm.structured.sent_schema`; optional ones too: their defaults do not stand in for
    what the cut took) is there and each list field kept an item: a cut inside a scalar field, or before a
    list's first item, is no answer.

    Why: a sampled answer of a small model can run into short tokens (repeated years, digits, symbols; 1.3
    characters a token measured on SmolLM2-135M at temperature 0.7) and outgrow the schema's token budget
    although every string and list is bounded; the items before the cut are answers. Raises ValueError
    (JSONAnswerError, pydantic.ValidationError) when no whole answer remains."""
    body = _THINK.sub("", text or "")
    start = body.find("{")
    if start < 0:
        raise JSONAnswerError("the answer contains no JSON object ({...})")
    try:
        obj = from_json(body[start:], allow_partial=True)
    except ValueError as exc:
        raise JSONAnswerError(f"the cut answer is not JSON before the cut: {exc}") from exc
    if not isinstance(obj, dict) or not obj:
        raise JSONAnswerError("the cut answer holds no field")
    last = obj[next(reversed(obj))]
    if isinstance(last, list):
        if last and not isinstance(last[-1], str):
            last.pop()  # a number, object or list the cut may have ended inside
    elif not isinstance(last, str):
        obj.popitem()  # a number (or literal) the cut may have ended inside; a cut string was dropped already
    missing = [k for k in sent_schema(schema).get("properties", {}) if k not in obj]
    empty = [k for k, v in obj.items() if isinstance(v, list) and not v]
    if missing or empty:
        raise JSONAnswerError(f"the cut answer has no whole {', '.join(missing + empty)}")
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
    instructions = JSON_INSTRUCTIONS.format(schema=json.dumps(sent_schema(schema), ensure_ascii=False))
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0].get('content', '')}\n\n{instructions}".lstrip()
    else:
        out.insert(0, {"role": "system", "content": instructions})
    return out
