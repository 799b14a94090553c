// One page of chunks with the text kbgraph.query.bm25 indexes (document title, section path, table summary,
// text) in chunk id order, after $after, at most $limit rows.
// Served chunks only: a chunk is left out when its Document is not 'complete' (still being written, or left
// 'writing' by a killed run; see ingest/mark_documents_complete).
MATCH (c:Chunk)
WHERE c.id > $after
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH c, d
WHERE coalesce(d.status, 'complete') = 'complete'
WITH c, d
ORDER BY c.id
LIMIT $limit
RETURN c.id AS id, c.text AS text, c.summary AS summary, c.kind AS kind, c.section_path AS section_path,
       d.title AS document_title, d.sha256 AS sha256
ORDER BY id
