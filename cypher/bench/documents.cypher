// benchmarks.ranker_compare: every Document's id, title and uri (the graph the list features read).
MATCH (d:Document)
RETURN d.id AS id, d.title AS title, d.uri AS uri
