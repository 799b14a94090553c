// benchmarks.layer_rss: the number of nodes of any label with an embedding.
MATCH (n)
WHERE n.embedding IS NOT NULL
RETURN count(n) AS count
