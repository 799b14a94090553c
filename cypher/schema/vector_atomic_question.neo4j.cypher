// kbgraph schema (vector index on AtomicQuestion.embedding, cosine); created idempotently by GraphStore.ensure_schema.
CREATE VECTOR INDEX atomic_question_embedding IF NOT EXISTS
FOR (n:AtomicQuestion) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}}
