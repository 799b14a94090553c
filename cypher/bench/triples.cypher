// benchmarks.ranker_compare: every Triple as (its chunk's id, its subject's id, its object's id).
MATCH (t:Triple)-[:EXTRACTED_FROM]->(c:Chunk)
MATCH (t)-[:SUBJECT]->(s:Entity)
MATCH (t)-[:OBJECT]->(o:Entity)
RETURN c.id AS chunk_id, s.id AS subject_id, o.id AS object_id
