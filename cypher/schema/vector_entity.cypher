// kbgraph schema (vector index on Entity.embedding, cosine); created idempotently by GraphStore.ensure_schema.
{{vector_index: entity_embedding, Entity, embedding}}
