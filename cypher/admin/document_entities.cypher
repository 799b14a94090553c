// Entities a document's chunks mention or its triples link: candidates for orphan removal.
MATCH (c:Chunk {document_id: $id})-[:MENTIONS]->(e:Entity)
RETURN DISTINCT e.id AS id
UNION
MATCH (t:Triple {document_id: $id})-[:SUBJECT|OBJECT]->(e:Entity)
RETURN DISTINCT e.id AS id
