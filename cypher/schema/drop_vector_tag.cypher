// kbgraph schema: drop the vector index on Tag.embedding (GraphStore.clear, when its dimension is not the settings' one).
{{drop_vector_index: tag_embedding, Tag, embedding}}
