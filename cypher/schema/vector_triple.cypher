// kbgraph schema (vector index on Triple.embedding, cosine); created idempotently by GraphStore.ensure_schema.
{{vector_index: triple_embedding, Triple, embedding}}
