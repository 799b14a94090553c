// Top-k nodes of one vector index. score: Neo4j's cosine score (1 + cos) / 2, in [0, 1].
// Only what complete documents hold (after the index's top $k): a Document whose status is 'complete', a Section,
// Chunk, AtomicQuestion or Triple whose Document is 'complete' (or absent); entities (of no one document) always.
CALL db.index.vector.queryNodes($index, $k, $embedding) YIELD node, score
OPTIONAL MATCH (d:Document {id: node.document_id})
WITH node, score, d
WHERE coalesce(d.status, node.status, 'complete') = 'complete'
RETURN node.id AS id, score, node {.*, embedding: null} AS properties
ORDER BY score DESC
