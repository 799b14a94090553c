// benchmarks.store_bytes: the index types of each property of every node label (FalkorDB's types column).
CALL db.indexes() YIELD label, types, entitytype
WHERE entitytype = 'NODE'
RETURN label, types
