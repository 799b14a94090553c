// kbgraph schema (range index on TagClass.id; uniqueness is added by GRAPH.CONSTRAINT); created idempotently by GraphStore.ensure_schema.
CREATE INDEX FOR (n:TagClass) ON (n.id)
