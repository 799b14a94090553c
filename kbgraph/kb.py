"""The public face: ``KnowledgeBase``, one knowledge base on one graph store."""

from __future__ import annotations

from typing import Any

from kbgraph.models import StoreStats
from kbgraph.settings import Settings
from kbgraph.store import GraphStore, open_store


class KnowledgeBase:
    """A knowledge base named ``name`` on the store the settings select (embedded FalkorDB by default).

    Usage::

        with KnowledgeBase("handbooks") as kb:
            kb.stats()

    The store is connected and its schema ensured on first use. Raises StoreUnavailable if the store
    cannot be reached, SchemaMismatch if its vector indexes were built for another embedding dimension.
    """

    def __init__(self, name: str | None = None, settings: Settings | None = None, **overrides: Any):
        if settings is None:
            settings = Settings(**({"name": name} if name else {}), **overrides)
        elif name or overrides:
            settings = settings.model_copy(update={**({"name": name} if name else {}), **overrides})
        self.settings = settings
        self._store: GraphStore | None = None

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def store(self) -> GraphStore:
        """The connected GraphStore (schema ensured)."""
        if self._store is None:
            store = open_store(self.settings)
            try:
                store.ensure_schema()
            except BaseException:
                store.close()
                raise
            self._store = store
        return self._store

    def stats(self) -> StoreStats:
        """Node counts per label and relationship counts per type."""
        return self.store.stats()

    def delete(self, document_id: str) -> dict[str, int]:
        """Remove one document's whole subgraph and the entities no other document uses."""
        return self.store.delete_document(document_id)

    def reset(self) -> None:
        """Delete every node and relationship of this knowledge base."""
        self.store.clear()

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"KnowledgeBase(name={self.name!r}, backend={self.settings.backend!r})"
