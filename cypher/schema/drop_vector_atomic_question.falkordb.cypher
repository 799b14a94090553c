// kbgraph schema: drop the vector index on AtomicQuestion.embedding (GraphStore.clear, when its dimension is not the settings' one).
DROP VECTOR INDEX FOR (n:AtomicQuestion) ON (n.embedding)
