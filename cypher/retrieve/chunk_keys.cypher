// One page of (chunk id, content hash of its document) in chunk id order, after $after, at most $limit rows:
// the fingerprint of the chunk corpus (kbgraph.query.bm25 rebuilds its BM25 index when it changes).
MATCH (c:Chunk)
WHERE c.id > $after
WITH c
ORDER BY c.id
LIMIT $limit
OPTIONAL MATCH (d:Document {id: c.document_id})
RETURN c.id AS id, d.sha256 AS sha256
ORDER BY id
