// kbgraph schema (uniqueness of Chunk.id); created idempotently by GraphStore.ensure_schema.
{{unique_index: chunk_id, Chunk, id}}
