// kbgraph schema (range index on Document.title, for the title hop of score propagation); created idempotently by GraphStore.ensure_schema.
{{range_index: document_title_range, Document, title}}
