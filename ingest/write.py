"""Stage 5: write one document's subgraph (all three layers) in one unit of work.

Order: Document (status 'writing') -> Sections (parent first) -> Chunks -> NEXT -> AtomicQuestions ->
Entities -> Triples -> MENTIONS -> Document status 'complete'. On Neo4j the unit is one transaction. On
FalkorDB each batch is atomic and a failure runs the compensation (delete the document's subgraph); a crash
that leaves a document 'writing' is repaired by the next run, which sees the incomplete status and writes it
anew. Every statement is a batched UNWIND from ``cypher/ingest/``. PIKE-RAG §5.1.2, Fig. 3.
"""

from __future__ import annotations

from kbgraph.models import DocumentGraph
from kbgraph.store import GraphStore


def _rows(records, *, exclude: set[str] | None = None) -> list[dict]:
    return [r.model_dump(exclude=exclude) for r in records]


def write_document(store: GraphStore, graph: DocumentGraph, *, replace: bool = False) -> dict[str, int]:
    """Write ``graph`` (every record embedded) into ``store``. With ``replace``, the document's existing
    subgraph is removed first (in the same unit of work on Neo4j). Returns counts written per kind.
    Raises SchemaMismatch for a wrong-sized embedding, StoreError if a statement fails; either way the
    document leaves nothing behind."""
    doc_id = graph.document.id
    chunks = sorted(graph.chunks, key=lambda c: c.order)
    next_rows = [{"from_id": a.id, "to_id": b.id} for a, b in zip(chunks, chunks[1:], strict=False)]
    entity_ids = [e.id for e in graph.entities]
    undo = [] if store.backend == "neo4j" else [lambda: store.delete_document(doc_id, entity_ids=entity_ids)]
    with store.transaction(on_rollback=undo) as tx:
        if replace:
            store.delete_document(doc_id, tx)
        tx.write_batches("ingest/upsert_document", [graph.document.model_dump()])
        tx.write_batches("ingest/upsert_sections", _rows(sorted(graph.sections, key=lambda s: s.order)))
        tx.write_batches("ingest/upsert_chunks", _rows(chunks))
        tx.write_batches("ingest/link_next", next_rows)
        tx.write_batches("ingest/upsert_questions", _rows(graph.questions))
        tx.write_batches("ingest/upsert_entities", _rows(graph.entities))
        tx.write_batches("ingest/upsert_triples", _rows(graph.triples))
        tx.write_batches("ingest/link_mentions", _rows(graph.mentions))
        tx.run("ingest/mark_document_complete", {"id": doc_id})
    return {
        "sections": len(graph.sections),
        "chunks": len(chunks),
        "questions": len(graph.questions),
        "entities": len(graph.entities),
        "triples": len(graph.triples),
        "mentions": len(graph.mentions),
        "statements": tx.statements,
    }
