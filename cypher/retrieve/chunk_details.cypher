// Chunks with their provenance: document, parent section, page (for citations and layer priors).
UNWIND $ids AS chunk_id
MATCH (c:Chunk {id: chunk_id})
OPTIONAL MATCH (d:Document {id: c.document_id})
OPTIONAL MATCH (s:Section)-[:HAS_CHUNK]->(c)
RETURN c.id AS id, c.text AS text, c.summary AS summary, c.kind AS kind, c.page AS page,
       c.section_path AS section_path, c.document_id AS document_id, d.title AS document_title,
       d.uri AS document_uri, s.id AS section_id
