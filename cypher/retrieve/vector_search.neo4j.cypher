// Top-k nodes of one vector index. score: Neo4j's cosine score (1 + cos) / 2, in [0, 1].
CALL db.index.vector.queryNodes($index, $k, $embedding) YIELD node, score
RETURN node.id AS id, score, node {.*, embedding: null} AS properties
ORDER BY score DESC
