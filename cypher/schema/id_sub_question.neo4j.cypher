// kbgraph schema (uniqueness of SubQuestion.id); created idempotently by GraphStore.ensure_schema.
CREATE CONSTRAINT sub_question_id IF NOT EXISTS FOR (n:SubQuestion) REQUIRE n.id IS UNIQUE
