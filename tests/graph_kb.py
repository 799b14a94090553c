"""A FalkorDB graph of a test module's own, built from hand-made DocumentGraphs: ``loaded_store(settings,
graphs)`` opens the store named by ``settings``, clears it, creates the schema, writes ``graphs`` (the
ingestion writer, ``kbgraph.ingest.write.write_documents``) and, on exit, clears and closes it. Used by the
method tests (Algorithm 1, MIGRES, HiRAG, routing) whose graphs are built without the ingestion pipeline."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kbgraph.models import DocumentGraph
    from kbgraph.settings import Settings
    from kbgraph.store.base import GraphStore


@contextmanager
def loaded_store(settings: Settings, graphs: Sequence[DocumentGraph]) -> Iterator[GraphStore]:
    """The open store of ``settings`` holding exactly ``graphs``; cleared and closed on exit."""
    from kbgraph.ingest.write import write_documents
    from kbgraph.store import open_store

    store = open_store(settings)
    store.clear()
    store.ensure_schema()
    write_documents(store, graphs)
    try:
        yield store
    finally:
        store.clear()
        store.close()


def user_message(messages: list[dict[str, str]]) -> str:
    """The last user message of a chat request."""
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")
