"""Bounded JSON answers: every answer schema sent to an LLM caps each string (``maxLength``) and each list
(``maxItems``), and each JSON request's token budget is sized from those caps, so a constrained decoder
(llama.cpp's ``json_schema`` grammar) closes the object before ``max_tokens`` cuts it, as long as the model's
tokens average ``CHARS_PER_TOKEN`` characters or more. A sampled answer that runs into shorter tokens
(repeated years and digits: ~1.3 characters a token; 4 of 40 SmolLM2-135M answers to the atomic-question
prompt at temperature 0.7) is cut, and its whole items are the answer
(:func:`kbgraph.llm.json_answers.salvage_cut`) rather than a repair request.

Why: a small model writing under a grammar cannot write invalid JSON, but it can write an unbounded string or
repeat list items until ``max_tokens`` cuts the answer mid-string; the answer is then unusable. With every
string and list bounded, the longest answer the grammar allows has a known size in characters; at
``CHARS_PER_TOKEN`` characters a token (BPE tokenizers give ~4 for English prose) plus the structure's
tokens, :func:`token_budget` is a ``max_tokens`` the answer fits in.

* :class:`MaxChars` / :class:`MaxItems`: the field metadata (``Annotated[str, MaxChars(80)]``: ``maxLength``
  in the JSON schema, and a longer value from an endpoint without a grammar is cut, not refused).
* :func:`answer_schema`: the class decorator registering an answer schema (``ANSWER_SCHEMAS``); the test
  suite walks the registry and fails on any unbounded string or array (:func:`unbounded_paths`).
* :func:`max_chars`, :func:`token_budget`: the longest answer in characters and the request's token budget
  (``BaseLLM.complete_json`` asks for ``max(llm_max_tokens, token_budget(schema))``).

Errors: :func:`max_chars` raises ``UnboundedSchema`` (a ``TypeError``) naming the first unbounded path.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from annotated_types import GroupedMetadata, MaxLen
from pydantic import BaseModel, BeforeValidator, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue

__all__ = [
    "ANSWER_SCHEMAS",
    "CHARS_PER_TOKEN",
    "MaxChars",
    "MaxItems",
    "UnboundedSchema",
    "answer_schema",
    "max_chars",
    "token_budget",
    "unbounded_paths",
]

#: Characters of a bounded string counted per token when sizing a budget: a lower bound for English text with
#: the BPE vocabularies of current chat models (SmolLM2's 49k vocabulary writes ~4.3 on its own answers).
CHARS_PER_TOKEN = 3.0
#: Tokens per JSON value for the structure around it (quotes, ',', ':', the grammar's optional whitespace).
STRUCTURE_TOKENS = 3
#: Tokens added to every budget (the end-of-turn token, a leading space).
SLACK_TOKENS = 16
#: Digits of an integer or number without a ``maximum`` (llama.cpp's grammar: at most 16 integral digits; a
#: model's tokenizer may write one token per digit).
NUMBER_CHARS = 20

ANSWER_SCHEMAS: dict[str, type[BaseModel]] = {}

S = TypeVar("S", bound=type[BaseModel])


class UnboundedSchema(TypeError):
    """An answer schema has a string without ``maxLength`` or an array without ``maxItems``."""


def answer_schema(cls: S) -> S:
    """Register ``cls`` as a schema of LLM answers (``ANSWER_SCHEMAS[cls.__qualname__ @ module]``)."""
    ANSWER_SCHEMAS[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return cls


@dataclass(frozen=True)
class MaxChars(GroupedMetadata):
    """Field metadata of a ``str`` of at most ``limit`` characters: ``Annotated[str, MaxChars(80)]`` has
    ``maxLength`` 80 in the schema, and a longer value (an endpoint that does not constrain decoding) is cut to
    ``limit`` characters (trailing whitespace dropped), not refused. ``at_least`` adds ``minLength`` to the
    schema only: a constrained decoder cannot then write ``""`` (a small model closes a list item at once),
    while a shorter value from an endpoint that does not constrain decoding is still accepted."""

    limit: int
    at_least: int = 0

    def __iter__(self) -> Iterator[object]:
        yield BeforeValidator(self._cut)
        yield MaxLen(self.limit)
        if self.at_least:
            yield _SchemaMinLength(self.at_least)

    def _cut(self, v: Any) -> Any:
        return v[: self.limit].rstrip() if isinstance(v, str) and len(v) > self.limit else v


@dataclass(frozen=True)
class _SchemaMinLength:
    """``minLength`` in the JSON schema, not checked on validation (see ``MaxChars.at_least``)."""

    length: int

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        js = handler(core_schema)
        js["minLength"] = self.length
        return js


@dataclass(frozen=True)
class MaxItems(GroupedMetadata):
    """Field metadata of a ``list`` of at most ``limit`` items: ``Annotated[list[X], MaxItems(16)]`` has
    ``maxItems`` 16 in the schema, and a longer list is cut to its first ``limit`` items."""

    limit: int

    def __iter__(self) -> Iterator[object]:
        yield BeforeValidator(self._cut)
        yield MaxLen(self.limit)

    def _cut(self, v: Any) -> Any:
        return v[: self.limit] if isinstance(v, list) else v


# --- walking a JSON schema --------------------------------------------------------------------------------

_UNBOUNDED_QUANTIFIER = re.compile(r"(?<!\\)(?:[*+]|\{\d*,\})")


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        resolved: dict[str, Any] = defs.get(ref.rsplit("/", 1)[-1], {})
        return resolved
    return node


def _walk(node: dict[str, Any], defs: dict[str, Any], path: str, problems: list[str]) -> int:
    """Longest JSON text of ``node`` in characters; unbounded places appended to ``problems``."""
    node = _resolve(node, defs)
    if "const" in node:
        return len(str(node["const"])) + 2
    if "enum" in node:
        return max((len(str(v)) + 2 for v in node["enum"]), default=4)
    for key in ("anyOf", "oneOf"):
        if key in node:
            return max((_walk(n, defs, path, problems) for n in node[key]), default=4)
    kind = node.get("type")
    if isinstance(kind, list):
        return max((_walk({**node, "type": k}, defs, path, problems) for k in kind), default=4)
    if kind == "string":
        limit = node.get("maxLength")
        if limit is None:
            problems.append(f"{path or '(root)'}: string without maxLength")
            return 0
        pattern = node.get("pattern")
        if pattern and _UNBOUNDED_QUANTIFIER.search(pattern):
            # llama.cpp's grammar follows the pattern and ignores maxLength when both are given
            problems.append(f"{path or '(root)'}: pattern {pattern!r} has an unbounded repetition")
        return int(limit) + 2
    if kind == "array":
        limit = node.get("maxItems")
        if limit is None:
            problems.append(f"{path or '(root)'}: array without maxItems")
        item = _walk(node.get("items", {}), defs, f"{path}[]", problems)
        return int(limit or 0) * (item + 2) + 2
    if kind == "object" or "properties" in node:
        extra = node.get("additionalProperties")
        if extra not in (None, False):
            problems.append(f"{path or '(root)'}: object with additionalProperties")
        total = 2
        for name, sub in (node.get("properties") or {}).items():
            total += len(name) + 4 + _walk(sub, defs, f"{path}.{name}" if path else name, problems)
        return total
    if kind in ("integer", "number"):
        top = node.get("maximum", node.get("exclusiveMaximum"))
        bottom = node.get("minimum", node.get("exclusiveMinimum"))
        if kind == "integer" and top is not None and bottom is not None:
            return max(len(str(int(top))), len(str(int(bottom))))
        return NUMBER_CHARS
    if kind == "boolean":
        return 5
    if kind == "null":
        return 4
    problems.append(f"{path or '(root)'}: value of any type")
    return 0


def _count_values(node: dict[str, Any], defs: dict[str, Any]) -> int:
    """Most JSON values (strings, numbers, keys) the longest answer holds: each costs STRUCTURE_TOKENS."""
    node = _resolve(node, defs)
    for key in ("anyOf", "oneOf"):
        if key in node:
            return max((_count_values(n, defs) for n in node[key]), default=1)
    if node.get("type") == "array":
        return 1 + int(node.get("maxItems") or 0) * _count_values(node.get("items", {}), defs)
    if node.get("type") == "object" or "properties" in node:
        return 1 + sum(1 + _count_values(sub, defs) for sub in (node.get("properties") or {}).values())
    return 1


def unbounded_paths(schema: type[BaseModel]) -> list[str]:
    """Where ``schema``'s JSON schema lets an answer grow without bound (empty when it is bounded)."""
    js = schema.model_json_schema()
    problems: list[str] = []
    _walk(js, js.get("$defs", {}), "", problems)
    return problems


def max_chars(schema: type[BaseModel]) -> int:
    """The longest answer ``schema`` allows, in characters (JSON without optional whitespace).
    Raises UnboundedSchema naming the unbounded places."""
    js = schema.model_json_schema()
    problems: list[str] = []
    chars = _walk(js, js.get("$defs", {}), "", problems)
    if problems:
        raise UnboundedSchema(f"{schema.__name__} is not bounded: {'; '.join(problems)}")
    return chars


def token_budget(schema: type[BaseModel]) -> int:
    """Completion tokens within which any answer ``schema`` allows fits: its longest answer's characters at
    ``CHARS_PER_TOKEN``, plus ``STRUCTURE_TOKENS`` a value and ``SLACK_TOKENS``. Raises UnboundedSchema."""
    js = schema.model_json_schema()
    chars = max_chars(schema)
    values = _count_values(js, js.get("$defs", {}))
    return math.ceil(chars / CHARS_PER_TOKEN) + STRUCTURE_TOKENS * values + SLACK_TOKENS
