// kbgraph schema (range index on IngestionRun.id; uniqueness is added by GRAPH.CONSTRAINT); created idempotently by GraphStore.ensure_schema.
CREATE INDEX FOR (n:IngestionRun) ON (n.id)
