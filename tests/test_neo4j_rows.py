"""A Neo4j record as a row dict (kbgraph.store.neo4j._row): a record of scalars is read directly, any other by
the driver's ``Record.data()``; either way the row is what ``data()`` gives. Nodes and relationships (the
fallback's reason) are read from a real server in tests/test_store.py and tests/test_browse.py. Not in tests/unit:
it imports the neo4j driver."""

from __future__ import annotations

from typing import Any

import pytest
from neo4j import Record

from kbgraph.store.neo4j import _row


@pytest.mark.parametrize(
    "pairs",
    [
        [("layer", "Chunk"), ("via", "c1"), ("chunk_id", "c1"), ("document_id", None), ("title", "T"), ("score", 0.5)],
        [("n", 3), ("ok", True), ("none", None)],
        [("ids", ["a", "b"]), ("x", 1)],  # a list: by data()
        [("m", {"k": [1.0, 2.0]})],  # a map: by data()
        [],
    ],
)
def test_a_row_is_what_record_data_gives(pairs: list[tuple[str, Any]]) -> None:
    record = Record(pairs)  # type: ignore[no-untyped-call]
    row = _row(record.keys(), record)
    assert type(row) is dict
    assert row == record.data()
    assert list(row) == [k for k, _ in pairs]  # the statement's column order


def test_scalars_keep_their_types() -> None:
    record = Record([("i", 1), ("f", 1.0), ("b", False), ("s", "1")])  # type: ignore[no-untyped-call]
    row = _row(record.keys(), record)
    assert [type(v) for v in row.values()] == [int, float, bool, str]
