// kbgraph schema (range index on Entity.id; uniqueness is added by GRAPH.CONSTRAINT); created idempotently by GraphStore.ensure_schema.
CREATE INDEX FOR (n:Entity) ON (n.id)
