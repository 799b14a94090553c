"""A filter (kbgraph.filters) resolved to the documents it allows, for one knowledge base (issue 58).

:func:`resolve_scope` compiles the filter against the knowledge base's metadata (kbgraph.filters.catalogue),
runs ``filters/documents`` with the predicate, and reads the chunks of the allowed documents
(``filters/scope_chunks``): a :class:`~kbgraph.store.scope.DocumentScope`, which the caller makes the scope of its
reads (``kbgraph.store.scope.within``; KnowledgeBase.ask and retrieve do). The catalogue and the last scopes are
kept per store object and corpus generation (kbgraph.query.bm25 ``corpus_generation``: every ingestion run and
deletion makes a new one), so a repeated filter costs one light statement.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections import OrderedDict
from typing import Any

from kbgraph.filters import Catalogue, Filter, compile_filter, describe, read_catalogue
from kbgraph.query.bm25 import corpus_generation
from kbgraph.store import GraphStore
from kbgraph.store.scope import DocumentScope

__all__ = ["catalogue", "resolve_scope"]

#: Scopes kept per knowledge base (the most recently used).
KEPT = 32


class _Cache:
    def __init__(self) -> None:
        self.generation: list[Any] | None = None
        self.catalogue: Catalogue | None = None
        self.total = 0
        self.scopes: OrderedDict[str, DocumentScope] = OrderedDict()
        self.lock = threading.Lock()


_CACHES: weakref.WeakKeyDictionary[GraphStore, _Cache] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _cache(store: GraphStore, generation: list[Any]) -> _Cache:
    with _LOCK:
        entry = _CACHES.get(store)
        if entry is None:
            entry = _CACHES[store] = _Cache()
    with entry.lock:
        if entry.generation != generation:
            entry.generation, entry.catalogue, entry.scopes = generation, None, OrderedDict()
    return entry


def catalogue(store: GraphStore, generation: list[Any] | None = None) -> Catalogue:
    """The metadata catalogue of ``store`` at its current corpus generation (read once per generation)."""
    entry = _cache(store, corpus_generation(store) if generation is None else generation)
    with entry.lock:
        if entry.catalogue is None:
            entry.catalogue = read_catalogue(store)
            rows = store.run("filters/count_chunks")
            entry.total = int(rows[0]["n"]) if rows else 0
        return entry.catalogue


def resolve_scope(store: GraphStore, filt: Filter | None) -> DocumentScope | None:
    """The documents of ``store`` that ``filt`` allows, with their chunks (None for no filter: every document).
    An empty scope (no document matches) is a scope too: its questions find nothing. Raises QueryError as
    kbgraph.filters ``compile_filter`` (an unknown key, a value of another type), StoreError as ``store.run``."""
    if filt is None:
        return None
    generation = corpus_generation(store)
    known = catalogue(store, generation)
    compiled = compile_filter(filt, known)
    entry = _cache(store, generation)
    key = json.dumps([compiled.predicate, compiled.params], sort_keys=True, default=str)
    with entry.lock:
        hit = entry.scopes.get(key)
        if hit is not None:
            entry.scopes.move_to_end(key)
            return hit
    documents = [r["id"] for r in store.run("filters/documents", compiled.params, predicate=compiled.predicate)]
    chunks = [r["id"] for r in store.run("filters/scope_chunks", {"ids": documents})] if documents else []
    scope = DocumentScope(
        frozenset(documents), frozenset(chunks), max(entry.total, len(chunks)), describe(filt), tuple(generation)
    )
    with entry.lock:
        entry.scopes[key] = scope
        while len(entry.scopes) > KEPT:
            entry.scopes.popitem(last=False)
    return scope
