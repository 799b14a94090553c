// kbgraph schema (vector index on Document.embedding, cosine); created idempotently by GraphStore.ensure_schema.
{{vector_index: document_embedding, Document, embedding}}
