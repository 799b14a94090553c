"""Names the store derives from the graph model: the schema statements in creation order, the labels scoped to a
document, the seed layers of vector retrieval, and the snake-case form of a label (statement and index names).
Pure functions of kbgraph.models; no store needed."""

from __future__ import annotations

import re

from kbgraph.models import FULLTEXT_INDEXES, NODE_LABELS, STANDARD_METADATA_KEYS, VECTOR_LABELS

#: Labels whose nodes carry ``document_id`` and get a range index on it.
DOCUMENT_SCOPED_LABELS = ("Section", "Chunk", "AtomicQuestion", "Triple")
#: The schema of the ingest lease and of the per-file claims (kbgraph.ingest.lease, kbgraph.ingest.claims): only a
#: store whose ingest lock lives in its database (``GraphStore.lease_key()`` not None: Neo4j) writes and reads
#: those nodes; the embedded FalkorDB keeps a file lock, and each index would cost its server ~110 KB for nothing
#: (docs/benchmarks.md#where-the-bytes-go-per-passage).
LEASE_SCHEMA = ("schema/ingest_lease_kb", "schema/ingest_claim_key")
#: The layers of retrieve/seed_vectors that may be searched with the static model's vector ($static_layers; Chunk never).
SEED_LAYERS = ("Document", "Section", "AtomicQuestion", "Triple", "Entity")


#: The statements that write vectors, by the label whose index holds them (``GraphStore.write_batches`` checks each
#: row's vector against that index's dimension; a statement not named here writes none or the Chunk's dimension).
VECTOR_WRITES = {
    "ingest/upsert_document": "Document",
    "ingest/upsert_sections": "Section",
    "ingest/upsert_chunks": "Chunk",
    "ingest/upsert_questions": "AtomicQuestion",
    "ingest/upsert_entities": "Entity",
    "ingest/upsert_triples": "Triple",
    "tags/upsert_tags": "Tag",
}


def vector_schema_label(name: str) -> str | None:
    """The label whose vector index the schema statement ``name`` creates ('schema/vector_entity' -> 'Entity'),
    or None for another statement."""
    return next((label for label in VECTOR_LABELS if name == f"schema/vector_{snake(label)}"), None)


def snake(label: str) -> str:
    """'AtomicQuestion' -> 'atomic_question' (names of schema statements and Neo4j indexes)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", label).lower()


def schema_statements(*, lease: bool = True) -> list[str]:
    """Names of the schema statements, in creation order; ``lease``: with LEASE_SCHEMA (for a store that keeps the
    ingest lease in its database)."""
    names = [f"schema/id_{snake(label)}" for label in NODE_LABELS]
    names += [f"schema/document_id_{snake(label)}" for label in DOCUMENT_SCOPED_LABELS]
    names += ["schema/title_document", *(LEASE_SCHEMA if lease else ())]
    names += [f"schema/metadata_document_{key}" for key in STANDARD_METADATA_KEYS if key != "title"]  # title_document
    names += [f"schema/vector_{snake(label)}" for label in VECTOR_LABELS]
    names += [f"schema/fulltext_{snake(label)}_{prop}" for label, prop in FULLTEXT_INDEXES]
    return names


#: The full-text seeds of score propagation per label: (the key of ``GraphStore.seed_fulltext``'s result, statement).
SEED_FULLTEXT = {
    "Chunk": ("Chunk.text", "retrieve/seed_fulltext_chunk"),
    "Entity": ("Entity.name", "retrieve/seed_fulltext_entity"),
}

#: How long ``GraphStore.await_indexes`` waits for the indexes to be built by default, in seconds.
INDEX_WAIT_SECONDS = 600.0
