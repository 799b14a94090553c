// kbgraph schema: drop the vector index on Document.embedding (GraphStore.clear, when its dimension is not the settings' one).
DROP VECTOR INDEX FOR (n:Document) ON (n.embedding)
