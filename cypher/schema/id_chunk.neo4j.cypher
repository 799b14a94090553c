// kbgraph schema (uniqueness of Chunk.id); created idempotently by GraphStore.ensure_schema.
CREATE CONSTRAINT chunk_id IF NOT EXISTS FOR (n:Chunk) REQUIRE n.id IS UNIQUE
