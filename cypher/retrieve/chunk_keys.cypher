// One page of (chunk id, content hash of its document) in chunk id order, after $after, at most $limit rows:
// the fingerprint of the chunk corpus (kbgraph.query.bm25 rebuilds its BM25 index when it changes).
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
RETURN c.id AS id, d.sha256 AS sha256
ORDER BY id
