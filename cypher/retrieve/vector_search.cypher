// Top-k nodes of one vector index ($label's, named $index). score: the store's vector score ({{vector_score}}:
// cypher/fragments/), best first.
// Only what complete documents hold (after the index's top $k): a Document whose status is 'complete', a Section,
// Chunk, AtomicQuestion or Triple whose Document is 'complete' (or absent); entities (of no one document) always.
{{vector_query: $label, $index, $k, $embedding}}
OPTIONAL MATCH (d:Document {id: node.document_id})
WITH node, score, d
WHERE coalesce(d.status, node.status, 'complete') = 'complete'
  AND ($documents IS NULL OR (node.document_id IS NULL AND d IS NULL AND NOT node:Document) OR d.id IN $documents OR (node:Document AND node.id IN $documents))
RETURN node.id AS id, score, node {.*, embedding: null} AS properties
ORDER BY score {{best_first}}
