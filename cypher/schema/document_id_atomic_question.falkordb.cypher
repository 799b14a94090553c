// kbgraph schema (range index on AtomicQuestion.document_id, for deleting a document's subgraph); created idempotently by GraphStore.ensure_schema.
CREATE INDEX FOR (n:AtomicQuestion) ON (n.document_id)
