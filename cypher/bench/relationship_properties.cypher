// benchmarks.store_bytes: the property keys of the relationships of type $type.
MATCH ()-[r]->()
WHERE type(r) = $type
UNWIND keys(r) AS k
RETURN DISTINCT k AS key
