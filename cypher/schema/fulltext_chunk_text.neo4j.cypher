// kbgraph schema (full-text index on Chunk.text); created idempotently by GraphStore.ensure_schema.
CREATE FULLTEXT INDEX chunk_text IF NOT EXISTS FOR (n:Chunk) ON EACH [n.text]
