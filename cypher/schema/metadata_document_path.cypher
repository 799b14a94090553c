// kbgraph schema (range index on Document.path, a standard metadata key that filters select on: issue 58, kbgraph.ingest.metadata); created idempotently by GraphStore.ensure_schema.
{{range_index: document_path, Document, path}}
