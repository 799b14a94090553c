// One page of chunks with the text kbgraph.query.bm25 indexes (document title, section path, table summary,
// text) in chunk id order, after $after, at most $limit rows.
MATCH (c:Chunk)
WHERE c.id > $after
WITH c
ORDER BY c.id
LIMIT $limit
OPTIONAL MATCH (d:Document {id: c.document_id})
RETURN c.id AS id, c.text AS text, c.summary AS summary, c.kind AS kind, c.section_path AS section_path,
       d.title AS document_title, d.sha256 AS sha256
ORDER BY id
