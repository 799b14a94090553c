// kbgraph schema (range index on SubQuestion.id; uniqueness is added by GRAPH.CONSTRAINT); created idempotently by GraphStore.ensure_schema.
CREATE INDEX FOR (n:SubQuestion) ON (n.id)
