// kbgraph schema (vector index on Chunk.embedding, cosine); created idempotently by GraphStore.ensure_schema.
CREATE VECTOR INDEX chunk_embedding IF NOT EXISTS
FOR (n:Chunk) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}}
