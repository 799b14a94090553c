// kbgraph schema (range index on Section.document_id, for deleting a document's subgraph); created idempotently by GraphStore.ensure_schema.
{{range_index: section_document_id, Section, document_id}}
