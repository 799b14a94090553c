"""The embedded FalkorDB's HNSW vector indexes are created with setting ``vector_ef_construction`` (default 50:
docs/benchmarks.md#hnsw-efconstruction-vector_ef_construction), M 16 and efRuntime 100, each at its label's
dimension; a knowledge base keeps the options it was created with. FalkorDB only: Neo4j keeps its own HNSW
options."""

from __future__ import annotations

import uuid
from typing import Any

from kbgraph.settings import Settings
from kbgraph.store import open_store


def _vector_options(settings: Settings) -> dict[str, dict[str, Any]]:
    store = open_store(settings)
    try:
        store.ensure_schema()
        rows = store.run("schema/list_indexes")
    finally:
        store.close()
    return {
        row["label"]: row["options"]["embedding"]
        for row in rows
        if isinstance(row.get("options"), dict) and isinstance(row["options"].get("embedding"), dict)
    }


def test_vector_indexes_take_the_setting_and_keep_it(falkor_settings: Settings) -> None:
    tag = uuid.uuid4().hex[:8]
    low = falkor_settings.updated({"name": f"ef{tag}", "vector_ef_construction": 20})
    options = _vector_options(low)
    assert {"Chunk", "AtomicQuestion", "Entity", "Document", "Section", "Tag"} <= set(options)
    for label, opt in options.items():
        assert (opt["efConstruction"], opt["M"], opt["efRuntime"]) == (20, 16, 100), label
    # an existing index keeps its options: another value does not rebuild it
    again = _vector_options(low.updated({"vector_ef_construction": 64}))
    assert {opt["efConstruction"] for opt in again.values()} == {20}
    # a new knowledge base at the default
    default = falkor_settings.updated({"name": f"ed{tag}"})
    assert default.store.vector_ef_construction == 50
    assert {opt["efConstruction"] for opt in _vector_options(default).values()} == {50}
    for settings in (low, default):
        store = open_store(settings)
        store.clear()
        store.close()
