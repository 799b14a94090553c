// kbgraph schema (uniqueness of Entity.id); created idempotently by GraphStore.ensure_schema.
CREATE CONSTRAINT entity_id IF NOT EXISTS FOR (n:Entity) REQUIRE n.id IS UNIQUE
