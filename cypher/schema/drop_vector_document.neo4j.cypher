// kbgraph schema: drop the vector index on Document.embedding (GraphStore.clear, when its dimension is not the settings' one).
DROP INDEX document_embedding IF EXISTS
