// benchmarks.layer_rss: the number of Document nodes (passages).
MATCH (d:Document)
RETURN count(d) AS count
