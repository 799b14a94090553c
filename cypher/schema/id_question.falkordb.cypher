// kbgraph schema (range index on Question.id; uniqueness is added by GRAPH.CONSTRAINT); created idempotently by GraphStore.ensure_schema.
CREATE INDEX FOR (n:Question) ON (n.id)
