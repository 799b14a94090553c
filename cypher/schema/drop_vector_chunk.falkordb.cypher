// kbgraph schema: drop the vector index on Chunk.embedding (GraphStore.clear, when its dimension is not the settings' one).
DROP VECTOR INDEX FOR (n:Chunk) ON (n.embedding)
