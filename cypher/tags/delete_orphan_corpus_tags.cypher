// Delete those of the corpus Tags $ids that no chunk is TAGGED with any more; returns, per deleted tag, the
// query Tags that mapped to it (tag pair collection, MAPS_TO), candidates for tags/delete_orphan_query_tags.
UNWIND $ids AS tag_id
MATCH (t:Tag {id: tag_id})
WHERE t.side = 'corpus' AND NOT (t)<-[:TAGGED]-()
OPTIONAL MATCH (q:Tag)-[:MAPS_TO]->(t)
WITH t, collect(q.id) AS query_ids
DETACH DELETE t
RETURN query_ids
