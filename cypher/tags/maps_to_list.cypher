// The tag pair collection (PIKE-RAG §5.2.2): every (:Tag {side: 'query'})-[:MAPS_TO]->(:Tag) edge, by query tag
// then best score (kbgraph tags pairs; tests).
MATCH (q:Tag)-[m:MAPS_TO]->(c:Tag)
RETURN q.id AS query_id, q.name AS query_tag, q.side AS query_side, c.id AS corpus_id, c.name AS corpus_tag,
       c.side AS corpus_side, m.score AS score, m.samples AS samples, m.learned_at AS learned_at
ORDER BY query_tag, score DESC, corpus_tag
