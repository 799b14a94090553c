// Score propagation: triples -> the chunks they were EXTRACTED_FROM.
UNWIND $ids AS triple_id
MATCH (t:Triple {id: triple_id})-[:EXTRACTED_FROM]->(c:Chunk)
RETURN t.id AS via, c.id AS chunk_id, t.text AS text
