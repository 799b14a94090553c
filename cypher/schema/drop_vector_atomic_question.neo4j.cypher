// kbgraph schema: drop the vector index on AtomicQuestion.embedding (GraphStore.clear, when its dimension is not the settings' one).
DROP INDEX atomic_question_embedding IF EXISTS
