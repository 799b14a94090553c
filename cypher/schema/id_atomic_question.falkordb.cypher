// kbgraph schema (range index on AtomicQuestion.id; uniqueness is added by GRAPH.CONSTRAINT); created idempotently by GraphStore.ensure_schema.
CREATE INDEX FOR (n:AtomicQuestion) ON (n.id)
