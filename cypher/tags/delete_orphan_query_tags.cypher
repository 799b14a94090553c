// Delete those of the query Tags $ids that map to no corpus Tag any more (their last MAPS_TO target deleted).
UNWIND $ids AS tag_id
MATCH (q:Tag {id: tag_id})
WHERE q.side = 'query' AND NOT (q)-[:MAPS_TO]->()
DETACH DELETE q
RETURN count(*) AS deleted
