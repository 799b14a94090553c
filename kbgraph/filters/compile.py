"""A filter (kbgraph.filters.model) as a Cypher predicate on the Document ``d`` with every key and value a
parameter (issue 58): the conditions are the fragments of ``cypher/fragments/filters.cypher``, joined with AND, OR
and NOT; the predicate goes into a statement's ``{{predicate}}`` (``kbgraph.cypher.compose``), which checks that
it holds no literal. A filter is checked against what the knowledge base's Documents hold
(:class:`~kbgraph.filters.catalogue.Catalogue`): an unknown key, a key kbgraph keeps for itself, or a value that
cannot be of the key's type is a QueryError naming it; text values are typed by the key ("2021" is the number 2021
for a key holding numbers), so the CLI's ``--where`` text needs no types.
"""

from __future__ import annotations

import difflib
from functools import cache
from typing import Any, NamedTuple

from kbgraph import cypher
from kbgraph.errors import QueryError
from kbgraph.filters.catalogue import FILTERABLE_RESERVED, Catalogue
from kbgraph.filters.model import And, Eq, Exists, Filter, In, Not, Or, Prefix, Range
from kbgraph.models import RESERVED_DOCUMENT_PROPERTIES

__all__ = ["CompiledFilter", "compile_filter"]


class CompiledFilter(NamedTuple):
    """``predicate``: Cypher text on ``d`` naming only ``params`` ($f0k, $f0v, ...); ``params``: their values."""

    predicate: str
    params: dict[str, Any]


@cache
def _conditions() -> dict[str, cypher.Fragment]:
    path = cypher.cypher_root() / cypher.FRAGMENTS / "filters.cypher"
    return cypher.parse_fragments(path.read_text(encoding="utf-8"), path)


def compile_filter(filt: Filter, catalogue: Catalogue, node: str = "d") -> CompiledFilter:
    """``filt`` as a predicate on ``node`` (module docstring). Raises QueryError for a key no Document holds
    (with the nearest known keys), a key kbgraph keeps for itself, a prefix on a key that holds no text, a range
    on lists or booleans, and a value that is not of the key's type."""
    params: dict[str, Any] = {}

    def cond(name: str, key: str, value: Any = None) -> str:
        n = len(params) // 2
        params[f"f{n}k"], args = key, [node, f"$f{n}k"]
        if name != "filter_exists":
            params[f"f{n}v"] = value
            args.append(f"$f{n}v")
        else:
            params[f"f{n}v"] = None
        return _conditions()[name].fill(tuple(args), "filter")

    def walk(f: Filter) -> str:
        if isinstance(f, (And, Or)):
            return "(" + f" {f.op.upper()} ".join(walk(child) for child in f.filters) + ")"
        if isinstance(f, Not):
            return f"(NOT {walk(f.filter)})"
        kinds = _kinds(f.key, catalogue)
        if isinstance(f, Exists):
            return cond("filter_exists", f.key)
        if isinstance(f, Eq):
            value = _typed(f.key, f.value, kinds)
            return cond("filter_contains" if kinds == {"list"} else "filter_eq", f.key, value)
        if isinstance(f, In):
            values = [_typed(f.key, v, kinds) for v in f.values]
            return cond("filter_overlaps" if kinds == {"list"} else "filter_in", f.key, values)
        if isinstance(f, Prefix):
            if kinds != {"text"}:
                raise QueryError(f"filter key {f.key!r} holds {_say(kinds)}, not only text: a prefix needs text")
            return cond("filter_prefix", f.key, f.value)
        assert isinstance(f, Range)
        if kinds & {"list", "bool"}:
            raise QueryError(f"filter key {f.key!r} holds {_say(kinds)}: a range needs numbers or text")
        parts = [cond(f"filter_{name}", f.key, _typed(f.key, value, kinds)) for name, value in f.bounds()]
        return "(" + " AND ".join(parts) + ")"

    return CompiledFilter(walk(filt), params)


def _kinds(key: str, catalogue: Catalogue) -> frozenset[str]:
    """The kinds of value ``key`` holds; QueryError for a key no Document has or one kbgraph keeps for itself."""
    if key in RESERVED_DOCUMENT_PROPERTIES and key not in FILTERABLE_RESERVED:
        raise QueryError(
            f"filter key {key!r} is kbgraph's own, not metadata: filter on one of "
            f"{', '.join(catalogue.names()) or '(no metadata yet)'}"
        )
    kinds = catalogue.keys.get(key)
    if kinds is None:
        near = difflib.get_close_matches(key, catalogue.names(), n=3)
        hint = f"; did you mean {' or '.join(repr(k) for k in near)}?" if near else ""
        raise QueryError(
            f"unknown filter key {key!r}: no document has it{hint} (keys: {', '.join(catalogue.names()) or 'none'})"
        )
    if "list" in kinds and len(kinds) > 1:
        raise QueryError(f"filter key {key!r} holds a list in some documents and a single value in others")
    return kinds


def _typed(key: str, value: Any, kinds: frozenset[str]) -> Any:
    """``value`` as the key's type: text that reads as a number for a numeric key, true/false for a boolean
    one, a number as its text for a text key (``created>=2021``). QueryError when no reading fits."""
    if kinds == {"list"}:
        kinds = frozenset({"text"})
    if isinstance(value, bool):
        if "bool" in kinds:
            return value
    elif isinstance(value, (int, float)):
        if "number" in kinds:
            return value
        if "text" in kinds:
            return str(value)
    else:
        text = str(value)
        if "number" in kinds:
            number = _number(text)
            if number is not None:
                return number
        if "bool" in kinds and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if "text" in kinds:
            return text
    raise QueryError(f"filter key {key!r} holds {_say(kinds)}: {value!r} is not one")


def _number(text: str) -> int | float | None:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None


def _say(kinds: frozenset[str]) -> str:
    words = {"text": "text", "number": "numbers", "bool": "booleans", "list": "lists of text"}
    return " and ".join(words[k] for k in sorted(kinds))
