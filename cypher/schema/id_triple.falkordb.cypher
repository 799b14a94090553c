// kbgraph schema (range index on Triple.id; uniqueness is added by GRAPH.CONSTRAINT); created idempotently by GraphStore.ensure_schema.
CREATE INDEX FOR (n:Triple) ON (n.id)
