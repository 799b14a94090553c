// kbgraph schema (range index on Chunk.document_id, for deleting a document's subgraph); created idempotently by GraphStore.ensure_schema.
CREATE INDEX FOR (n:Chunk) ON (n.document_id)
