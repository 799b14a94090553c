// The Tags a document's chunks are TAGGED with: candidates for orphan removal when the document is deleted.
MATCH (c:Chunk {document_id: $id})-[:TAGGED]->(t:Tag)
RETURN DISTINCT t.id AS id
