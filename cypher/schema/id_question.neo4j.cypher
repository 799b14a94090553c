// kbgraph schema (uniqueness of Question.id); created idempotently by GraphStore.ensure_schema.
CREATE CONSTRAINT question_id IF NOT EXISTS FOR (n:Question) REQUIRE n.id IS UNIQUE
