// Full-text (Lucene) top-k of one index; $query is built from escaped words by kbgraph.
// Only what complete documents hold (after the top $k): a Document whose status is 'complete', a Section,
// Chunk, AtomicQuestion or Triple whose Document is 'complete' (or absent); entities (of no one document) always.
CALL db.index.fulltext.queryNodes($index, $query, {limit: $k}) YIELD node, score
OPTIONAL MATCH (d:Document {id: node.document_id})
WITH node, score, d
WHERE coalesce(d.status, node.status, 'complete') = 'complete'
  AND ($documents IS NULL OR (node.document_id IS NULL AND d IS NULL AND NOT node:Document) OR d.id IN $documents OR (node:Document AND node.id IN $documents))
RETURN node.id AS id, score, node {.*, embedding: null} AS properties
ORDER BY score DESC
LIMIT $k
