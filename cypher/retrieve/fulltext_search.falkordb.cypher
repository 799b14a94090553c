// Full-text (RediSearch) top-k of one label; $query is built from escaped words by kbgraph.
CALL db.idx.fulltext.queryNodes($label, $query) YIELD node, score
RETURN node.id AS id, score, node {.*, embedding: null} AS properties
ORDER BY score DESC
LIMIT $k
