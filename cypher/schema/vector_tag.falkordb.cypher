// kbgraph schema (vector index on Tag.embedding, cosine (HNSW); corpus tags only carry one); created idempotently by GraphStore.ensure_schema.
CREATE VECTOR INDEX FOR (n:Tag) ON (n.embedding)
OPTIONS {dimension: $dimension, similarityFunction: 'cosine', M: $m, efConstruction: $ef_construction, efRuntime: $ef_runtime}
