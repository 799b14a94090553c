// kbgraph schema: drop the vector index on Section.embedding (GraphStore.clear, when its dimension is not the settings' one).
DROP INDEX section_embedding IF EXISTS
