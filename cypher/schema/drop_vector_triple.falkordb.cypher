// kbgraph schema: drop the vector index on Triple.embedding (GraphStore.clear, when its dimension is not the settings' one).
DROP VECTOR INDEX FOR (n:Triple) ON (n.embedding)
