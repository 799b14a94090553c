// kbgraph schema: drop the vector index on Triple.embedding (GraphStore.clear, when its dimension is not the settings' one).
DROP INDEX triple_embedding IF EXISTS
