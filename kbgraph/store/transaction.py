"""A unit of work on a GraphStore (``GraphStore.transaction``), and the tag clean-up run inside one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kbgraph import cypher
from kbgraph.store.params import Row

if TYPE_CHECKING:
    from typing import Any

    from kbgraph.store.base import GraphStore


class Transaction:
    """One unit of work, opened by ``GraphStore.transaction``. ``run`` and ``write_batches`` as on the store;
    ``statements`` counts what the unit sent. Whether a failed unit is rolled back or compensated is the
    store's decision (``GraphStore.rolls_back``), never the caller's."""

    def __init__(self, store: GraphStore, handle: Any):
        self._store = store
        self._handle = handle
        self.statements = 0

    def run(self, name: str, params: Row | None = None) -> list[Row]:
        self.statements += 1
        self._store.sent[name] += 1
        return self._store._execute(cypher.load(name, self._store.dialect), params or {}, self._handle)

    def write_batches(self, name: str, rows: Sequence[Row], params: Row | None = None) -> int:
        total = 0
        for batch in self._store._batches(rows, name):
            self.run(name, {**(params or {}), "rows": batch})
            total += len(batch)
        return total


def delete_orphan_tags(tx: Transaction | GraphStore, tag_ids: Sequence[str]) -> int:
    """Delete those of the corpus Tags ``tag_ids`` that no chunk is TAGGED with any more, then the query Tags
    that mapped (MAPS_TO) only to deleted ones (auto-tagging, PIKE-RAG §5.2.2). Returns the Tags deleted."""
    if not tag_ids:
        return 0
    rows = tx.run("tags/delete_orphan_corpus_tags", {"ids": list(tag_ids)})
    query_ids = list(dict.fromkeys(q for r in rows for q in (r["query_ids"] or [])))
    deleted = len(rows)
    if query_ids:
        deleted += int(tx.run("tags/delete_orphan_query_tags", {"ids": query_ids})[0]["deleted"])
    return deleted
