// benchmarks.store_bytes: every index's status (FalkorDB: OPERATIONAL once built).
CALL db.indexes() YIELD status
RETURN status
