// kbgraph schema (vector index on Triple.embedding, cosine); created idempotently by GraphStore.ensure_schema.
CREATE VECTOR INDEX triple_embedding IF NOT EXISTS
FOR (n:Triple) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}}
