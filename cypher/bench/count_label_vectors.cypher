// benchmarks.scale: the number of nodes of label $label with an embedding.
MATCH (n)
WHERE $label IN labels(n) AND n.embedding IS NOT NULL
RETURN count(n) AS count
