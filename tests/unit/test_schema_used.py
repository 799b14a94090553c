"""No index nobody queries (issue 38): every index a store's schema creates is on a label that a statement of its
dialect outside ``schema/`` names. An index costs the embedded FalkorDB server ~110 KB even when its label has no
node, and its entries besides (docs/benchmarks.md#where-the-bytes-go-per-passage); the ingest lease's and the
claims' indexes (``LEASE_SCHEMA``) were created on FalkorDB, which keeps a file lock and never reads those nodes."""

from __future__ import annotations

import re

import pytest

from kbgraph import cypher
from kbgraph.settings import Settings
from kbgraph.store import store_class
from kbgraph.store.schema import LEASE_SCHEMA, schema_statements

#: The label a schema statement indexes: ``FOR (n:Label)`` (range, vector, Neo4j full-text: the first label) or
#: FalkorDB's ``createNodeIndex('Label', ...)``.
_INDEXED = re.compile(r"FOR \(\w+:(\w+)|createNodeIndex\('(\w+)'")


def _created(uri: str | None) -> tuple[str, list[str]]:
    """(dialect, the schema statements ``ensure_schema`` of the store class for ``uri`` runs), through its own
    ``ensure_schema`` on an instance that is not connected: nothing is sent, the names are recorded."""
    cls = store_class(Settings(uri=uri))
    store = object.__new__(cls)
    store.dimension = 384
    store.dimensions = {}
    store.ef_construction = 50
    store.database = "neo4j"  # type: ignore[attr-defined]  # Neo4jStore.lease_key reads it; FalkorDB's ignores it
    names: list[str] = []
    store._list_vector_dimensions = dict  # type: ignore[method-assign]
    store._create_schema_statement = lambda name, params: names.append(name)  # type: ignore[method-assign]
    store.await_indexes = lambda timeout=0.0: None  # type: ignore[method-assign]  # it reads the server's indexes
    store.ensure_schema()
    return cls.dialect, names


@pytest.mark.parametrize("uri", [None, "bolt://h:7687"])
def test_every_index_is_on_a_label_the_dialect_reads(uri: str | None) -> None:
    dialect, names = _created(uri)
    assert names and set(names) <= set(schema_statements())
    others = "\n".join(
        cypher.load(name, dialect) for name in cypher.statements(dialect) if not name.startswith("schema/")
    )
    for name in names:
        found = _INDEXED.search(cypher.load(name, dialect))
        assert found, f"{name}: no indexed label found in its statement"
        label = found.group(1) or found.group(2)
        assert re.search(rf":{label}\b", others), (
            f"{name} ({dialect}) indexes {label}, which no {dialect} statement names"
        )


def test_falkordb_creates_no_lease_schema_neo4j_does() -> None:
    assert not set(LEASE_SCHEMA) & set(_created(None)[1])  # the embedded store's file lock: no lease, no claims
    assert set(LEASE_SCHEMA) <= set(_created("bolt://h:7687")[1])
    assert not any(cypher.statements("falkordb").get(name) for name in LEASE_SCHEMA)  # no FalkorDB variant left
