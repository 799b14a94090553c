// kbgraph schema: drop the vector index on AtomicQuestion.embedding (GraphStore.clear, when its dimension is not the settings' one).
{{drop_vector_index: atomic_question_embedding, AtomicQuestion, embedding}}
