// kbgraph schema (vector index on Triple.embedding, cosine (HNSW)); created idempotently by GraphStore.ensure_schema.
CREATE VECTOR INDEX FOR (n:Triple) ON (n.embedding)
OPTIONS {dimension: $dimension, similarityFunction: 'cosine', M: $m, efConstruction: $ef_construction, efRuntime: $ef_runtime}
