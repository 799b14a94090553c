"""Names the store derives from the graph model: the schema statements in creation order, the labels scoped to a
document, the seed layers of vector retrieval, and the snake-case form of a label (statement and index names).
Pure functions of kbgraph.models; no store needed."""

from __future__ import annotations

import re

from kbgraph.models import FULLTEXT_INDEXES, NODE_LABELS, VECTOR_LABELS

#: Labels whose nodes carry ``document_id`` and get a range index on it.
DOCUMENT_SCOPED_LABELS = ("Section", "Chunk", "AtomicQuestion", "Triple")
#: The layers of retrieve/seed_vectors with a query vector of their own ($<snake label>_embedding; Chunk: $embedding).
SEED_LAYERS = ("Document", "Section", "AtomicQuestion", "Triple", "Entity")


def snake(label: str) -> str:
    """'AtomicQuestion' -> 'atomic_question' (names of schema statements and Neo4j indexes)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", label).lower()


def schema_statements() -> list[str]:
    """Names of the schema statements, in creation order."""
    names = [f"schema/id_{snake(label)}" for label in NODE_LABELS]
    names += [f"schema/document_id_{snake(label)}" for label in DOCUMENT_SCOPED_LABELS]
    names += ["schema/title_document", "schema/ingest_lease_kb", "schema/ingest_claim_key"]
    names += [f"schema/vector_{snake(label)}" for label in VECTOR_LABELS]
    names += [f"schema/fulltext_{snake(label)}_{prop}" for label, prop in FULLTEXT_INDEXES]
    return names
