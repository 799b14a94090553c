// Auto-tagging at query time (PIKE-RAG §5.2.2): the nearest corpus Tags of each question tag
// ($tags: [{norm, embedding}]) on the Tag vector index, top $k each (query tags have no embedding; the side test
// is a guard). similarity: cosine in [-1, 1] (Neo4j's score is (1 + cos) / 2).
UNWIND $tags AS t
CALL db.index.vector.queryNodes('tag_embedding', $k, t.embedding) YIELD node, score
WITH t, node, score
WHERE node.side = 'corpus'
RETURN t.norm AS query_norm, node.id AS id, node.name AS name, 2.0 * score - 1.0 AS similarity
