// Score propagation: sections -> the chunks directly under them (HAS_CHUNK).
UNWIND $ids AS section_id
MATCH (s:Section {id: section_id})-[:HAS_CHUNK]->(c:Chunk)
RETURN s.id AS via, c.id AS chunk_id, s.path AS text
