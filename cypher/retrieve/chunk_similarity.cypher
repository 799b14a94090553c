// Exact similarity of the question to candidate chunks (score propagation, kbgraph.query.propagation.propagate).
// Served chunks only: a chunk is left out when its Document is not 'complete' (still being written, or left
// 'writing' by a killed run; see ingest/mark_documents_complete).
// score: the store's vector score ({{vector_score}}: cypher/fragments/), as the vector index reports it.
UNWIND $ids AS chunk_id
MATCH (c:Chunk {id: chunk_id})
WHERE c.embedding IS NOT NULL
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH c, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
RETURN c.id AS id, {{vector_score: c.embedding, $embedding}} AS score
