// kbgraph schema (full-text index on Document.title); created idempotently by GraphStore.ensure_schema.
{{fulltext_index: document_title, Document, title}}
