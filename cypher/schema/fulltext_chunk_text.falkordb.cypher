// kbgraph schema (full-text index on Chunk.text (RediSearch)); created idempotently by GraphStore.ensure_schema.
CALL db.idx.fulltext.createNodeIndex('Chunk', 'text')
