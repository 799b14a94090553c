// Delete those of the given entities that nothing mentions or links any more.
UNWIND $ids AS entity_id
MATCH (e:Entity {id: entity_id})
WHERE NOT (e)<-[:MENTIONS]-() AND NOT (e)<-[:SUBJECT|OBJECT]-()
DETACH DELETE e
RETURN count(*) AS deleted
