// kbgraph schema (vector index on Entity.embedding, cosine); created idempotently by GraphStore.ensure_schema.
CREATE VECTOR INDEX entity_embedding IF NOT EXISTS
FOR (n:Entity) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}}
