// kbgraph schema: drop the vector index on Triple.embedding (GraphStore.clear, when its dimension is not the settings' one).
{{drop_vector_index: triple_embedding, Triple, embedding}}
