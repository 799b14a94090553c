// kbgraph schema (range index on AtomicQuestion.document_id, for deleting a document's subgraph); created idempotently by GraphStore.ensure_schema.
{{range_index: atomic_question_document_id, AtomicQuestion, document_id}}
