// kbgraph schema (vector index on Document.embedding, cosine); created idempotently by GraphStore.ensure_schema.
CREATE VECTOR INDEX document_embedding IF NOT EXISTS
FOR (n:Document) ON (n.embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}}
