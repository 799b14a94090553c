// benchmarks.store_bytes (FalkorDB: typeOf): per property key of the nodes whose first label is $label: its value type and count.
MATCH (n)
WHERE labels(n)[0] = $label
UNWIND keys(n) AS k
RETURN k AS key, typeOf(n[k]) AS type, count(*) AS count
