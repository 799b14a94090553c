// Chunks with their provenance: document, parent section, page (for citations and layer priors).
// Served chunks only: a chunk is left out when its Document is not 'complete' (still being written, or left
// 'writing' by a killed run; see ingest/mark_documents_complete).
UNWIND $ids AS chunk_id
MATCH (c:Chunk {id: chunk_id})
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH c, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
OPTIONAL MATCH (s:Section)-[:HAS_CHUNK]->(c)
RETURN c.id AS id, c.text AS text, c.summary AS summary, c.kind AS kind, c.page AS page,
       c.section_path AS section_path, c.document_id AS document_id, d.title AS document_title,
       d.uri AS document_uri, s.id AS section_id
