// Triples with EXTRACTED_FROM their Chunk, SUBJECT/OBJECT to Entities, and RELATED between the entities.
UNWIND $rows AS row
MATCH (c:Chunk {id: row.chunk_id})
MATCH (s:Entity {id: row.subject_id})
MATCH (o:Entity {id: row.object_id})
MERGE (t:Triple {id: row.id})
SET t.subject = row.subject, t.predicate = row.predicate, t.object = row.object, t.text = row.text,
    t.document_id = c.document_id, t.embedding = {{vector: row.embedding}}
MERGE (t)-[:EXTRACTED_FROM]->(c)
MERGE (t)-[:SUBJECT]->(s)
MERGE (t)-[:OBJECT]->(o)
MERGE (s)-[r:RELATED {triple_id: row.id}]->(o)
SET r.predicate = row.predicate
