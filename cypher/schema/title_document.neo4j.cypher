// kbgraph schema (range index on Document.title, for the title hop of score propagation); created idempotently by GraphStore.ensure_schema.
CREATE INDEX document_title_range IF NOT EXISTS FOR (n:Document) ON (n.title)
