// benchmarks.store_bytes: every index's label, properties and types (FalkorDB's columns).
CALL db.indexes() YIELD label, properties, types
RETURN label, properties, types
