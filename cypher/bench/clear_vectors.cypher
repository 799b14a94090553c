// benchmarks.layer_rss, benchmarks.store_bytes: the embedding property of every node of label $label removed.
MATCH (n)
WHERE $label IN labels(n)
SET n.embedding = NULL
