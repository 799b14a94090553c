"""What the knowledge base's Documents hold, for filters (kbgraph.filters.compile): every metadata key and the
kinds of value it holds ('text', 'number', 'bool', 'list'), read by ``filters/document_properties``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kbgraph.models import RESERVED_DOCUMENT_PROPERTIES
from kbgraph.store import GraphStore

__all__ = ["Catalogue", "FILTERABLE_RESERVED", "kind_of", "read_catalogue"]

#: kbgraph's own Document properties a filter may name (the others are internal: kbgraph.models
#: ``RESERVED_DOCUMENT_PROPERTIES``, never shown as metadata nor filtered on).
FILTERABLE_RESERVED = frozenset({"title", "mime", "ingested_at", "ocr"})


@dataclass(frozen=True)
class Catalogue:
    """``keys``: {metadata key: the kinds of value the complete Documents hold for it}; ``documents``: how many
    complete Documents were read."""

    keys: dict[str, frozenset[str]]
    documents: int

    def names(self) -> list[str]:
        """The keys a filter may name, sorted."""
        return sorted(self.keys)


def kind_of(value: Any) -> str | None:
    """The kind of a property value: 'bool', 'number', 'text', 'list' (None for null or another type)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "list"
    return None


def read_catalogue(store: GraphStore) -> Catalogue:
    """The :class:`Catalogue` of ``store``'s complete Documents (one statement; properties kbgraph keeps for itself
    left out but :data:`FILTERABLE_RESERVED`). Raises StoreError as ``store.run``."""
    keys: dict[str, set[str]] = {}
    rows = store.run("filters/document_properties")
    for row in rows:
        for key, value in (row.get("properties") or {}).items():
            kind = kind_of(value)
            if kind is None or (key in RESERVED_DOCUMENT_PROPERTIES and key not in FILTERABLE_RESERVED):
                continue
            keys.setdefault(key, set()).add(kind)
    return Catalogue({k: frozenset(v) for k, v in keys.items()}, len(rows))
