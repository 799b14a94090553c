// kbgraph schema: drop the vector index on Entity.embedding (GraphStore.clear, when its dimension is not the settings' one).
DROP VECTOR INDEX FOR (n:Entity) ON (n.embedding)
