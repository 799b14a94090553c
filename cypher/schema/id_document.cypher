// kbgraph schema (uniqueness of Document.id); created idempotently by GraphStore.ensure_schema.
{{unique_index: document_id, Document, id}}
