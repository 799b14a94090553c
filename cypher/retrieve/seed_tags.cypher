// Auto-tagging at query time (PIKE-RAG §5.2.2): the nearest corpus Tags of each question tag
// ($tags: [{norm, embedding}]) on the Tag vector index, top $k each (query tags have no embedding; the side test
// is a guard). similarity: cosine in [-1, 1] (the index's score mapped back).
UNWIND $tags AS t
{{vector_query: 'Tag', 'tag_embedding', $k, t.embedding}}
WITH t, node, score
WHERE node.side = 'corpus'
RETURN t.norm AS query_norm, node.id AS id, node.name AS name, {{vector_similarity: score}} AS similarity
