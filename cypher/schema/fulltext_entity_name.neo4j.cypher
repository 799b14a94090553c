// kbgraph schema (full-text index on Entity.name); created idempotently by GraphStore.ensure_schema.
CREATE FULLTEXT INDEX entity_name IF NOT EXISTS FOR (n:Entity) ON EACH [n.name]
