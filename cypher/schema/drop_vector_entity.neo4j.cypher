// kbgraph schema: drop the vector index on Entity.embedding (GraphStore.clear, when its dimension is not the settings' one).
DROP INDEX entity_embedding IF EXISTS
