// kbgraph schema (vector index on AtomicQuestion.embedding, cosine); created idempotently by GraphStore.ensure_schema.
{{vector_index: atomic_question_embedding, AtomicQuestion, embedding}}
