// The texts of the gbm ranker's candidate chunks (kbgraph.query.propagation.ranking_gbm: its list features read the pool's
// titles and texts). The pool holds served chunks only already (kbgraph.query.propagation.propagate learned_pool).
UNWIND $ids AS chunk_id
MATCH (c:Chunk {id: chunk_id})
WHERE $documents IS NULL OR c.document_id IN $documents
RETURN c.id AS id, c.text AS text
