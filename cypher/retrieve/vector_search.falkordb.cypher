// Top-k nodes of one label's vector index. score: cosine distance 1 - cos, in [0, 2] (0 = identical).
// Only what complete documents hold (after the index's top $k): a Document whose status is 'complete', a Section,
// Chunk, AtomicQuestion or Triple whose Document is 'complete' (or absent); entities (of no one document) always.
CALL db.idx.vector.queryNodes($label, 'embedding', $k, vecf32($embedding)) YIELD node, score
OPTIONAL MATCH (d:Document {id: node.document_id})
WITH node, score, d
WHERE coalesce(d.status, node.status, 'complete') = 'complete'
RETURN node.id AS id, score, node {.*, embedding: null} AS properties
ORDER BY score ASC
