// kbgraph schema (range index on Triple.document_id, for deleting a document's subgraph); created idempotently by GraphStore.ensure_schema.
CREATE INDEX FOR (n:Triple) ON (n.document_id)
