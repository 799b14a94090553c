// Exact similarity of the question to candidate chunks (score propagation, kbgraph.query.propagation).
// score: Neo4j's cosine score (1 + cos) / 2, as the vector index reports it.
UNWIND $ids AS chunk_id
MATCH (c:Chunk {id: chunk_id})
WHERE c.embedding IS NOT NULL
RETURN c.id AS id, vector.similarity.cosine(c.embedding, $embedding) AS score
