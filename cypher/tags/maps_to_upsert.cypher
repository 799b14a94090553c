// Tag-pair collection (PIKE-RAG §5.2.2): (:Tag {side: 'query'})-[:MAPS_TO {score, samples, learned_at}]->
// (:Tag {side: 'corpus'}) for each of $pairs ([{query_id, corpus_id, score, samples}]), merged: re-learning sets
// the new score, never a second edge. A pair whose corpus tag no longer exists is skipped.
UNWIND $pairs AS p
MATCH (q:Tag {id: p.query_id})
MATCH (c:Tag {id: p.corpus_id})
MERGE (q)-[m:MAPS_TO]->(c)
SET m.score = p.score, m.samples = p.samples, m.learned_at = $now
RETURN count(m) AS written
