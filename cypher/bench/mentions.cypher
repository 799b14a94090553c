// benchmarks.ranker_compare: every MENTIONS edge as (chunk id, entity id).
MATCH (c:Chunk)-[:MENTIONS]->(e:Entity)
RETURN c.id AS chunk_id, e.id AS entity_id
