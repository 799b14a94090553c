// kbgraph schema (full-text index on Document.title); created idempotently by GraphStore.ensure_schema.
CREATE FULLTEXT INDEX document_title IF NOT EXISTS FOR (n:Document) ON EACH [n.title]
