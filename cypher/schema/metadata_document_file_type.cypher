// kbgraph schema (range index on Document.file_type, a standard metadata key that filters select on: issue 58, kbgraph.ingest.metadata); created idempotently by GraphStore.ensure_schema.
{{range_index: document_file_type, Document, file_type}}
