// kbgraph schema (range index on Document.title, for the title hop of score propagation); created idempotently by GraphStore.ensure_schema.
CREATE INDEX FOR (n:Document) ON (n.title)
