"""The filter model: which Documents a question, a browse or a key may read (issue 58), by their metadata
(kbgraph.models ``STANDARD_METADATA_KEYS`` and the user's own keys).

A filter is a tree of pydantic models discriminated by ``op``: the leaves ``eq``, ``in``, ``range``, ``prefix`` and
``exists`` name one metadata ``key``; ``and``, ``or`` and ``not`` combine filters. As JSON (the API's ``filters``
field, an MCP tool's ``filters`` parameter)::

    {"op": "and", "filters": [
        {"op": "prefix", "key": "folder", "value": "hr/"},
        {"op": "range", "key": "year", "gte": 2021},
        {"op": "not", "filter": {"op": "eq", "key": "status_note", "value": "draft"}}]}

The CLI's ``--where`` text (kbgraph.filters.where) parses to the same models. A filter is compiled to a Cypher
predicate whose every value and key is a parameter (kbgraph.filters.compile). Bounds keep a hostile filter cheap:
at most :data:`MAX_LEAVES` leaves, :data:`MAX_DEPTH` levels and :data:`MAX_VALUES` values in one ``in``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError, model_validator

from kbgraph.errors import QueryError

__all__ = [
    "And",
    "Eq",
    "Exists",
    "Filter",
    "In",
    "Not",
    "Or",
    "Prefix",
    "Range",
    "all_of",
    "describe",
    "leaves",
    "parse_filter",
]

#: A metadata key as filters name it: a Cypher-style property name.
Key = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=64)]
#: A value compared with a property: text (at most 1,000 characters), a number or a boolean.
Scalar = Annotated[str, StringConstraints(max_length=1000)] | int | float | bool
#: A bound of a range: text (ISO 8601 dates compare as text) or a number.
Bound = Annotated[str, StringConstraints(max_length=1000)] | int | float
MAX_LEAVES = 64
MAX_DEPTH = 8
MAX_VALUES = 1000


class _Node(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Eq(_Node):
    """``key`` equals ``value`` (for a key holding a list: the list contains ``value``)."""

    op: Literal["eq"] = "eq"
    key: Key
    value: Scalar


class In(_Node):
    """``key`` equals one of ``values`` (for a list key: the list contains one of them)."""

    op: Literal["in"] = "in"
    key: Key
    values: list[Scalar] = Field(min_length=1, max_length=MAX_VALUES)


class Range(_Node):
    """``key`` within the bounds given (at least one): ``gte``/``gt`` below, ``lte``/``lt`` above."""

    op: Literal["range"] = "range"
    key: Key
    gte: Bound | None = None
    gt: Bound | None = None
    lte: Bound | None = None
    lt: Bound | None = None

    @model_validator(mode="after")
    def _bounds(self) -> Range:
        if all(b is None for b in (self.gte, self.gt, self.lte, self.lt)):
            raise ValueError(f"a range on {self.key!r} needs a bound: gte, gt, lte or lt")
        if self.gte is not None and self.gt is not None or self.lte is not None and self.lt is not None:
            raise ValueError(f"a range on {self.key!r} takes one lower bound (gte or gt) and one upper (lte or lt)")
        return self

    def bounds(self) -> list[tuple[str, Any]]:
        """The bounds given, as (operator name, value): 'gte', 'gt', 'lte', 'lt'."""
        return [(name, b) for name in ("gte", "gt", "lte", "lt") if (b := getattr(self, name)) is not None]


class Prefix(_Node):
    """``key`` (text) starts with ``value``."""

    op: Literal["prefix"] = "prefix"
    key: Key
    value: Annotated[str, StringConstraints(max_length=1000)]


class Exists(_Node):
    """The Document has ``key``."""

    op: Literal["exists"] = "exists"
    key: Key


class And(_Node):
    """Every one of ``filters``."""

    op: Literal["and"] = "and"
    filters: list[Filter] = Field(min_length=1, max_length=MAX_LEAVES)


class Or(_Node):
    """At least one of ``filters``."""

    op: Literal["or"] = "or"
    filters: list[Filter] = Field(min_length=1, max_length=MAX_LEAVES)


class Not(_Node):
    """Not ``filter``."""

    op: Literal["not"] = "not"
    filter: Filter


Leaf = Eq | In | Range | Prefix | Exists
Filter = Annotated[Eq | In | Range | Prefix | Exists | And | Or | Not, Field(discriminator="op")]
for _model in (And, Or, Not):
    _model.model_rebuild()
_ADAPTER: TypeAdapter[Filter] = TypeAdapter(Filter)


def parse_filter(data: Any) -> Filter:
    """``data`` (a filter model, or its JSON as dict or text) as a checked :data:`Filter`. Raises QueryError naming
    what is wrong (an unknown ``op``, a missing key, a value of another type, a tree over the bounds)."""
    if isinstance(data, (Eq, In, Range, Prefix, Exists, And, Or, Not)):
        filt: Filter = data
    else:
        try:
            filt = _ADAPTER.validate_json(data) if isinstance(data, (str, bytes)) else _ADAPTER.validate_python(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "filter"
            raise QueryError(f"invalid filter at {where}: {first.get('msg')}") from None
    _check_size(filt)
    return filt


def _check_size(filt: Filter) -> None:
    count = 0

    def walk(node: Filter, depth: int) -> None:
        nonlocal count
        if depth > MAX_DEPTH:
            raise QueryError(f"a filter nests at most {MAX_DEPTH} levels")
        if isinstance(node, (And, Or)):
            for child in node.filters:
                walk(child, depth + 1)
        elif isinstance(node, Not):
            walk(node.filter, depth + 1)
        else:
            count += 1
            if count > MAX_LEAVES:
                raise QueryError(f"a filter holds at most {MAX_LEAVES} conditions")

    walk(filt, 1)


def leaves(filt: Filter) -> list[Leaf]:
    """The conditions of ``filt`` in order (the leaves of its tree)."""
    if isinstance(filt, (And, Or)):
        return [leaf for child in filt.filters for leaf in leaves(child)]
    if isinstance(filt, Not):
        return leaves(filt.filter)
    return [filt]


def all_of(*filters: Filter | None) -> Filter | None:
    """The conjunction of the filters given (None ones left out): None for none, the filter itself for one."""
    given = [f for f in filters if f is not None]
    if not given:
        return None
    return given[0] if len(given) == 1 else And(filters=given)


def describe(filt: Filter) -> str:
    """``filt`` as ``--where`` text would write it, for messages and logs: ``folder^=hr/ and year>=2021``."""
    if isinstance(filt, (And, Or)):
        return "(" + f" {filt.op} ".join(describe(f) for f in filt.filters) + ")"
    if isinstance(filt, Not):
        return f"not {describe(filt.filter)}"
    if isinstance(filt, Eq):
        return f"{filt.key}={filt.value}"
    if isinstance(filt, In):
        return f"{filt.key}=" + "|".join(str(v) for v in filt.values)
    if isinstance(filt, Prefix):
        return f"{filt.key}^={filt.value}"
    if isinstance(filt, Exists):
        return f"{filt.key}?"
    signs = {"gte": ">=", "gt": ">", "lte": "<=", "lt": "<"}
    return " and ".join(f"{filt.key}{signs[name]}{value}" for name, value in filt.bounds())
