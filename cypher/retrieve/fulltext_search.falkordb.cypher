// Full-text (RediSearch) top-k of one label; $query is built from escaped words by kbgraph.
// The procedure yields every match, so rows are cut to $k before the property maps are projected (3x faster).
CALL db.idx.fulltext.queryNodes($label, $query) YIELD node, score
WITH node, score
ORDER BY score DESC
LIMIT $k
RETURN node.id AS id, score, node {.*, embedding: null} AS properties
