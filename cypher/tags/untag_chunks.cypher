// Auto-tagging (PIKE-RAG §5.2.2): remove the TAGGED edges of the chunks $ids before they are tagged again;
// returns the tags they led to (candidates for orphan removal).
UNWIND $ids AS chunk_id
MATCH (c:Chunk {id: chunk_id})-[r:TAGGED]->(t:Tag)
WITH r, t.id AS tag_id
DELETE r
RETURN DISTINCT tag_id AS id
