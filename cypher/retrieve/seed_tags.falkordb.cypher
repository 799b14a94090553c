// Auto-tagging at query time (PIKE-RAG §5.2.2): the nearest corpus Tags of each question tag
// ($tags: [{norm, embedding}]) on the Tag vector index, top $k each (query tags have no embedding; the side test
// is a guard). similarity: cosine in [-1, 1] (FalkorDB's score is the distance 1 - cos).
UNWIND $tags AS t
CALL db.idx.vector.queryNodes('Tag', 'embedding', $k, vecf32(t.embedding)) YIELD node, score
WITH t, node, score
WHERE node.side = 'corpus'
RETURN t.norm AS query_norm, node.id AS id, node.name AS name, 1.0 - score AS similarity
