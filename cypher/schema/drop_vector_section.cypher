// kbgraph schema: drop the vector index on Section.embedding (GraphStore.clear, when its dimension is not the settings' one).
{{drop_vector_index: section_embedding, Section, embedding}}
