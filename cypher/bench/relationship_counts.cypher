// benchmarks.store_bytes: the number of relationships per type.
MATCH ()-[r]->()
RETURN type(r) AS type, count(r) AS count
