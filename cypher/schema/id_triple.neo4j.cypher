// kbgraph schema (uniqueness of Triple.id); created idempotently by GraphStore.ensure_schema.
CREATE CONSTRAINT triple_id IF NOT EXISTS FOR (n:Triple) REQUIRE n.id IS UNIQUE
