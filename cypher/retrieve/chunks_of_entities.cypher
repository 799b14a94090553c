// Score propagation: entities -> the chunks that MENTION them, with the entity's degree (number of
// mentioning chunks); entities mentioned by more than $max_degree chunks carry no signal and are skipped.
UNWIND $ids AS entity_id
MATCH (e:Entity {id: entity_id})<-[:MENTIONS]-(c:Chunk)
WITH e, collect(c.id) AS chunk_ids
WHERE size(chunk_ids) <= $max_degree
UNWIND chunk_ids AS chunk_id
RETURN e.id AS via, chunk_id, e.name AS text, size(chunk_ids) AS degree
