// benchmarks.store_bytes (FalkorDB: typeOf): the string values of property $key on the nodes of label $label.
MATCH (n)
WHERE $label IN labels(n) AND typeOf(n[$key]) = 'String'
RETURN n[$key] AS value
