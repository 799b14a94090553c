// kbgraph schema: drop the vector index on Tag.embedding (GraphStore.clear, when its dimension is not the settings' one).
DROP VECTOR INDEX FOR (n:Tag) ON (n.embedding)
