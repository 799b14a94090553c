// kbgraph schema (vector index on Chunk.embedding, cosine); created idempotently by GraphStore.ensure_schema.
{{vector_index: chunk_embedding, Chunk, embedding}}
