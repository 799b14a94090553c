// Backup retrieval of knowledge-aware decomposition (kbgraph.query.decompose): the atomic questions of the
// given chunks (Chunk -HAS_QUESTION-> AtomicQuestion), so that a chunk found through the Chunk vector index
// (path (a) of PIKE-RAG Fig. 11) can be offered to the selector with its best-matching atomic question.
UNWIND $ids AS chunk_id
MATCH (c:Chunk {id: chunk_id})-[:HAS_QUESTION]->(q:AtomicQuestion)
RETURN c.id AS chunk_id, q.id AS question_id, q.text AS text
ORDER BY chunk_id, question_id
