// Full-text (RediSearch) top-k of one label; $query is built from escaped words by kbgraph.
// The procedure yields every match, so rows are cut to $k before the property maps are projected (3x faster).
// Only what complete documents hold (after the top $k): a Document whose status is 'complete', a Section,
// Chunk, AtomicQuestion or Triple whose Document is 'complete' (or absent); entities (of no one document) always.
CALL db.idx.fulltext.queryNodes($label, $query) YIELD node, score
WITH node, score
ORDER BY score DESC
LIMIT $k
OPTIONAL MATCH (d:Document {id: node.document_id})
WITH node, score, d
WHERE coalesce(d.status, node.status, 'complete') = 'complete'
  AND ($documents IS NULL OR (node.document_id IS NULL AND d IS NULL AND NOT node:Document) OR d.id IN $documents OR (node:Document AND node.id IN $documents))
RETURN node.id AS id, score, node {.*, embedding: null} AS properties
