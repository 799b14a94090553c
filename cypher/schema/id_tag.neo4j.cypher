// kbgraph schema (uniqueness of Tag.id: stable_id('tag', side, norm), PIKE-RAG §5.2.2 auto-tagging); created idempotently by GraphStore.ensure_schema.
CREATE CONSTRAINT tag_id IF NOT EXISTS FOR (n:Tag) REQUIRE n.id IS UNIQUE
