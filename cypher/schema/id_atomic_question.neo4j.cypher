// kbgraph schema (uniqueness of AtomicQuestion.id); created idempotently by GraphStore.ensure_schema.
CREATE CONSTRAINT atomic_question_id IF NOT EXISTS FOR (n:AtomicQuestion) REQUIRE n.id IS UNIQUE
