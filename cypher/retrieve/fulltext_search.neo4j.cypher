// Full-text (Lucene) top-k of one index; $query is built from escaped words by kbgraph.
CALL db.index.fulltext.queryNodes($index, $query, {limit: $k}) YIELD node, score
RETURN node.id AS id, score, node {.*, embedding: null} AS properties
ORDER BY score DESC
LIMIT $k
