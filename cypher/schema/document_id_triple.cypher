// kbgraph schema (range index on Triple.document_id, for deleting a document's subgraph); created idempotently by GraphStore.ensure_schema.
{{range_index: triple_document_id, Triple, document_id}}
