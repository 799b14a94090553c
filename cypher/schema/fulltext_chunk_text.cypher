// kbgraph schema (full-text index on Chunk.text); created idempotently by GraphStore.ensure_schema.
{{fulltext_index: chunk_text, Chunk, text}}
