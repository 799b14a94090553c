// kbgraph schema (range index on Chunk.document_id, for deleting a document's subgraph); created idempotently by GraphStore.ensure_schema.
{{range_index: chunk_document_id, Chunk, document_id}}
