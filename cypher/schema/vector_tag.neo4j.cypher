// kbgraph schema (vector index on Tag.embedding, cosine; corpus tags only carry one); created idempotently by GraphStore.ensure_schema.
CREATE VECTOR INDEX tag_embedding IF NOT EXISTS
FOR (n:Tag) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}}
