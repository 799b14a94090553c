// kbgraph schema (range index on Section.document_id, for deleting a document's subgraph); created idempotently by GraphStore.ensure_schema.
CREATE INDEX section_document_id IF NOT EXISTS FOR (n:Section) ON (n.document_id)
