// Auto-tagging at query time (PIKE-RAG §5.2.2): the corpus tags that the question's tags map to through the
// tag pair collection: query Tags by id ($query_ids: stable_id('tag', 'query', norm)) -MAPS_TO-> corpus Tags.
UNWIND $query_ids AS query_id
MATCH (q:Tag {id: query_id})-[m:MAPS_TO]->(c:Tag)
WHERE c.side = 'corpus'
RETURN q.id AS query_id, c.id AS id, c.name AS name, m.score AS score
ORDER BY query_id, id
