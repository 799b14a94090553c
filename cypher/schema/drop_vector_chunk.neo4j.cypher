// kbgraph schema: drop the vector index on Chunk.embedding (GraphStore.clear, when its dimension is not the settings' one).
DROP INDEX chunk_embedding IF EXISTS
