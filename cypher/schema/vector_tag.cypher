// kbgraph schema (vector index on Tag.embedding, cosine; corpus tags only carry one); created idempotently by GraphStore.ensure_schema.
{{vector_index: tag_embedding, Tag, embedding}}
