"""The store backends the tests parametrize over. Neo4j needs the local JVM server (~40 s to start on 2 busy
cores), so its parameter carries the ``neo4j`` and ``slow`` marks: ``pytest -m "not slow"`` (the fast tier)
runs every backend-parametrized test on the embedded FalkorDB only."""

from __future__ import annotations

import pytest

NEO4J = pytest.param("neo4j", marks=[pytest.mark.neo4j, pytest.mark.slow])
BACKENDS = ["falkordb", NEO4J]
