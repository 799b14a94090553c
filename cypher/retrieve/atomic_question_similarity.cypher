// Exact similarity of a query vector to atomic questions, by their stored (indexed) vector: Algorithm 2 line 13
// (kbgraph.eval.decomposer_data), the same vector line 10 reads through the index.
// Atomic questions of served chunks only: left out when its Document is not 'complete' (still being written, or left
// 'writing' by a killed run; see ingest/mark_documents_complete).
// score: the store's vector score ({{vector_score}}: cypher/fragments/), as the vector index reports it.
UNWIND $ids AS question_id
MATCH (a:AtomicQuestion {id: question_id})<-[:HAS_QUESTION]-(c:Chunk)
WHERE a.embedding IS NOT NULL
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH a, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
RETURN a.id AS id, {{vector_score: a.embedding, $embedding}} AS score
