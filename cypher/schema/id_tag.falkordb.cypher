// kbgraph schema (range index on Tag.id; uniqueness is added by GRAPH.CONSTRAINT); created idempotently by GraphStore.ensure_schema.
CREATE INDEX FOR (n:Tag) ON (n.id)
