// Backup retrieval of knowledge-aware decomposition (kbgraph.query.methods.decompose): the atomic questions of the
// given chunks (Chunk -HAS_QUESTION-> AtomicQuestion), so that a chunk found through the Chunk vector index
// (path (a) of PIKE-RAG Fig. 11) can be offered to the selector with its best-matching atomic question.
// Served chunks only: a chunk is left out when its Document is not 'complete' (still being written, or left
// 'writing' by a killed run; see ingest/mark_documents_complete).
UNWIND $ids AS chunk_id
MATCH (c:Chunk {id: chunk_id})
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH c, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
MATCH (c)-[:HAS_QUESTION]->(q:AtomicQuestion)
RETURN c.id AS chunk_id, q.id AS question_id, q.text AS text
ORDER BY chunk_id, question_id
