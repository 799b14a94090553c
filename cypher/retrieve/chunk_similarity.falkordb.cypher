// Exact similarity of the question to candidate chunks (score propagation, kbgraph.query.propagation).
// score: cosine distance 1 - cos, as the vector index reports it.
UNWIND $ids AS chunk_id
MATCH (c:Chunk {id: chunk_id})
WHERE c.embedding IS NOT NULL
RETURN c.id AS id, vec.cosineDistance(c.embedding, vecf32($embedding)) AS score
