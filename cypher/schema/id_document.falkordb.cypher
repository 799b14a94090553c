// kbgraph schema (range index on Document.id; uniqueness is added by GRAPH.CONSTRAINT); created idempotently by GraphStore.ensure_schema.
CREATE INDEX FOR (n:Document) ON (n.id)
