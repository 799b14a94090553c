"""Document filters (issue 58): the filter model (:mod:`kbgraph.filters.model`), the CLI's ``--where`` text
(:mod:`kbgraph.filters.where`), the knowledge base's metadata catalogue (:mod:`kbgraph.filters.catalogue`) and the
compilation to a Cypher predicate with parameters only (:mod:`kbgraph.filters.compile`). kbgraph.query.scope
resolves a filter to the documents it allows; kbgraph.store.scope carries them to every retrieval statement."""

from kbgraph.filters.catalogue import Catalogue, kind_of, read_catalogue
from kbgraph.filters.compile import CompiledFilter, compile_filter
from kbgraph.filters.model import (
    And,
    Eq,
    Exists,
    Filter,
    In,
    Not,
    Or,
    Prefix,
    Range,
    all_of,
    describe,
    leaves,
    parse_filter,
)
from kbgraph.filters.where import parse_where

__all__ = [
    "And",
    "Catalogue",
    "CompiledFilter",
    "Eq",
    "Exists",
    "Filter",
    "In",
    "Not",
    "Or",
    "Prefix",
    "Range",
    "all_of",
    "compile_filter",
    "describe",
    "kind_of",
    "leaves",
    "parse_filter",
    "parse_where",
    "read_catalogue",
]
