"""JSON answers from a chat model: the instructions that carry the pydantic schema in the prompt, extraction
of the JSON object from an answer (``<think>`` blocks of reasoning models and Markdown fences dropped),
validation, and the model-readable description of why an answer was rejected (for the repair request).
Used by :class:`kbgraph.llm.base.BaseLLM.complete_json` for every JSON-answering prompt."""

from __future__ import annotations

import json
import re
from typing import TypeVar

from pydantic import BaseModel, ValidationError

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
