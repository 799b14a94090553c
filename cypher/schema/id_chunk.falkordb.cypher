// kbgraph schema (range index on Chunk.id; uniqueness is added by GRAPH.CONSTRAINT); created idempotently by GraphStore.ensure_schema.
CREATE INDEX FOR (n:Chunk) ON (n.id)
