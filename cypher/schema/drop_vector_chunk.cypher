// kbgraph schema: drop the vector index on Chunk.embedding (GraphStore.clear, when its dimension is not the settings' one).
{{drop_vector_index: chunk_embedding, Chunk, embedding}}
