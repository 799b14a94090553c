// kbgraph schema (full-text index on Tag.name); created idempotently by GraphStore.ensure_schema.
CREATE FULLTEXT INDEX tag_name IF NOT EXISTS FOR (n:Tag) ON EACH [n.name]
