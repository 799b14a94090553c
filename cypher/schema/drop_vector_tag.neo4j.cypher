// kbgraph schema: drop the vector index on Tag.embedding (GraphStore.clear, when its dimension is not the settings' one).
DROP INDEX tag_embedding IF EXISTS
