// kbgraph schema (vector index on Section.embedding, cosine); created idempotently by GraphStore.ensure_schema.
CREATE VECTOR INDEX section_embedding IF NOT EXISTS
FOR (n:Section) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}}
