// kbgraph schema (range index on AtomicQuestion.document_id, for deleting a document's subgraph); created idempotently by GraphStore.ensure_schema.
CREATE INDEX atomic_question_document_id IF NOT EXISTS FOR (n:AtomicQuestion) ON (n.document_id)
