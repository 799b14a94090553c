"""The ``--where`` text of the CLI (``kbgraph ask --where 'folder^=hr/' --where 'year>=2021'``) as filter models
(kbgraph.filters.model). One condition per ``--where``; several are all required (``and``):

======================  ==============================================
``key=value``           equals (:class:`~kbgraph.filters.model.Eq`)
``key=a|b|c``           one of (:class:`~kbgraph.filters.model.In`)
``key!=value``          not equal (``not`` of ``eq``)
``key^=prefix``         starts with (:class:`~kbgraph.filters.model.Prefix`)
``key>=v`` ``key>v``    at least / above (:class:`~kbgraph.filters.model.Range`)
``key<=v`` ``key<v``    at most / below
``key?`` / ``!key?``    has the key / has it not (:class:`~kbgraph.filters.model.Exists`)
======================  ==============================================

Values are text here; the compiler types them by what the documents hold (``year>=2021`` compares numbers when
``year`` holds numbers, text when it holds text: kbgraph.filters.compile). Quotes around a value are removed
(``title='Annual report'``), spaces around the operator too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kbgraph.errors import QueryError
from kbgraph.filters.model import Eq, Exists, Filter, In, Not, Prefix, all_of, parse_filter

__all__ = ["parse_where"]

_KEY = r"[A-Za-z_][A-Za-z0-9_]*"
_EXISTS = re.compile(rf"^\s*(!?)\s*({_KEY})\s*\?\s*$")
_COMPARE = re.compile(rf"^\s*({_KEY})\s*(\^=|!=|>=|<=|=|>|<)\s*(.*?)\s*$", re.DOTALL)
_BOUND = {">=": "gte", ">": "gt", "<=": "lte", "<": "lt"}


def parse_where(conditions: Sequence[str]) -> Filter | None:
    """The filter all of ``conditions`` make (module docstring), or None for none. Raises QueryError naming the
    condition that is not of the syntax, with the syntax."""
    return all_of(*(_one(text) for text in conditions)) if conditions else None


def _one(text: str) -> Filter:
    exists = _EXISTS.match(text)
    if exists:
        leaf: Filter = Exists(key=exists.group(2))
        return Not(filter=leaf) if exists.group(1) else leaf
    match = _COMPARE.match(text)
    if match is None:
        raise QueryError(
            f"--where {text!r} is not a condition: write key=value, key!=value, key=a|b, key^=prefix, key>=value, "
            "key>value, key<=value, key<value, key? or !key? (key: letters, digits, _)"
        )
    key, sign, raw = match.groups()
    value = _unquote(raw)
    if sign == "^=":
        return parse_filter(Prefix(key=key, value=value))
    if sign in _BOUND:
        return parse_filter({"op": "range", "key": key, _BOUND[sign]: value})
    if sign == "=" and "|" in value and not _quoted(raw):
        return parse_filter(In(key=key, values=[_unquote(v) for v in value.split("|")]))
    eq = parse_filter(Eq(key=key, value=value))
    return Not(filter=eq) if sign == "!=" else eq


def _quoted(raw: str) -> bool:
    return len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\""


def _unquote(raw: str) -> str:
    raw = raw.strip()
    return raw[1:-1] if _quoted(raw) else raw
