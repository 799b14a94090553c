// kbgraph schema: drop the vector index on Entity.embedding (GraphStore.clear, when its dimension is not the settings' one).
{{drop_vector_index: entity_embedding, Entity, embedding}}
