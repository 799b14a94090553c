// kbgraph schema (vector index on Section.embedding, cosine); created idempotently by GraphStore.ensure_schema.
{{vector_index: section_embedding, Section, embedding}}
