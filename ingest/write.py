"""Stage 5: write documents' subgraphs (all three layers) in one unit of work.

Order: Documents (status 'writing') -> Sections (parent first) -> Chunks -> NEXT -> AtomicQuestions ->
Entities -> Triples -> MENTIONS -> Documents' status 'complete', as one unit of work of the store
(``GraphStore.transaction``) with one compensation: delete the documents' subgraphs and the entities nothing
else uses. The store decides how a failed unit is undone: Neo4j rolls its transaction back; FalkorDB, where
each batch is atomic, runs the compensation. A crash that leaves a document 'writing' is repaired by the next
run, which does not count an incomplete document as unchanged and writes it anew. Every statement is a
batched UNWIND from ``cypher/ingest/``. PIKE-RAG §5.1.2, Fig. 3.

Concurrent writers (setting ``ingest_writers = "claims"``, kbgraph.ingest.claims) share the ``Entity`` nodes: the
unique constraint on ``Entity.id`` makes two MERGEs of one entity create it once, the rows that lock entities
(entities, triples, mentions) are sent sorted by entity id so that two units lock them in the same order, and a
unit the database aborts for a passing reason (``StoreTransient``: Neo4j's DeadlockDetected) is rolled back and
run again, up to ``TRANSIENT_ATTEMPTS`` times, before its documents count as failed.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterable, Sequence

from kbgraph.errors import StoreTransient
from kbgraph.models import DocumentGraph
from kbgraph.store import GraphStore
from kbgraph.store.schema import VECTOR_WRITES

log = logging.getLogger("kbgraph.ingest")

#: Times a unit of work aborted by a transient error (a deadlock) is run in all before it fails.
TRANSIENT_ATTEMPTS = 6


def write_documents(
    store: GraphStore, graphs: Sequence[DocumentGraph], *, replace_ids: Iterable[str] = ()
) -> dict[str, int]:
    """Write ``graphs`` (every record embedded) into ``store`` in one unit of work. Documents in
    ``replace_ids`` have their existing subgraph removed first, inside the same unit. Returns counts written
    per kind. Raises SchemaMismatch for a wrong-sized embedding (checked before anything is written),
    StoreError if a statement fails; either way none of the documents is left behind."""
    replace_ids = set(replace_ids)
    chunks = [c for g in graphs for c in sorted(g.chunks, key=lambda c: c.order)]
    next_rows = []
    for g in graphs:
        ordered = sorted(g.chunks, key=lambda c: c.order)
        next_rows += [{"from_id": a.id, "to_id": b.id} for a, b in zip(ordered, ordered[1:], strict=False)]
    # sorted by id: one lock order for concurrent writers (module doc)
    entities = dict(sorted({e.id: e for g in graphs for e in g.entities}.items()))
    rows = {
        "ingest/upsert_document": [g.document.model_dump() for g in graphs],
        "ingest/upsert_sections": [s.model_dump() for g in graphs for s in sorted(g.sections, key=lambda s: s.order)],
        "ingest/upsert_chunks": [c.model_dump() for c in chunks],
        "ingest/link_next": next_rows,
        "ingest/upsert_questions": [q.model_dump() for g in graphs for q in g.questions],
        "ingest/upsert_entities": [e.model_dump() for e in entities.values()],
        "ingest/upsert_triples": sorted(
            (t.model_dump() for g in graphs for t in g.triples),
            key=lambda r: (r["subject_id"], r["object_id"], r["id"]),
        ),
        "ingest/link_mentions": sorted(
            (m.model_dump() for g in graphs for m in g.mentions), key=lambda r: (r["entity_id"], r["chunk_id"])
        ),
    }
    for name, batch in rows.items():  # validate every vector before the first write (float32 arrays from here on)
        for row in batch:
            if row.get("embedding") is not None:
                row["embedding"] = store.check_vector(row["embedding"], VECTOR_WRITES[name])
    doc_ids = [g.document.id for g in graphs]

    def undo_all() -> None:  # the store runs it only where it cannot roll the unit back (FalkorDB)
        for doc_id in doc_ids:
            store.delete_document(doc_id, entity_ids=list(entities))

    for attempt in range(1, TRANSIENT_ATTEMPTS + 1):
        try:
            with store.transaction(on_rollback=[undo_all]) as tx:
                for doc_id in doc_ids:
                    if doc_id in replace_ids:
                        store.delete_document(doc_id, tx)
                for name, batch in rows.items():
                    tx.write_batches(name, batch)
                tx.run("ingest/mark_documents_complete", {"ids": doc_ids})
            break
        except StoreTransient as exc:  # rolled back: nothing of the unit is left, run it again
            if attempt == TRANSIENT_ATTEMPTS:
                raise
            pause = random.uniform(0.05, 0.2) * 2**attempt
            log.warning(
                "writing %d documents: %s; running the unit again in %.1f s (attempt %d of %d)",
                len(doc_ids),
                exc,
                pause,
                attempt + 1,
                TRANSIENT_ATTEMPTS,
            )
            time.sleep(pause)
    counts = {name.split("/")[1]: len(batch) for name, batch in rows.items()}
    counts["statements"] = tx.statements
    return counts


def write_document(store: GraphStore, graph: DocumentGraph, *, replace: bool = False) -> dict[str, int]:
    """Write one document (see ``write_documents``)."""
    return write_documents(store, [graph], replace_ids={graph.document.id} if replace else ())
