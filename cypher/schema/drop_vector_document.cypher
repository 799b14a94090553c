// kbgraph schema: drop the vector index on Document.embedding (GraphStore.clear, when its dimension is not the settings' one).
{{drop_vector_index: document_embedding, Document, embedding}}
