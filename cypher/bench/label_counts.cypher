// benchmarks.store_bytes: the number of nodes per (first) label.
MATCH (n)
RETURN labels(n)[0] AS label, count(n) AS count
