// Tag-pair collection (PIKE-RAG §5.2.2): the corpus-side tags of the gold chunks $chunk_ids
// ((:Chunk)-[:TAGGED]->(:Tag {side: 'corpus'}), written at ingest), one row per (chunk, tag).
UNWIND $chunk_ids AS chunk_id
MATCH (c:Chunk {id: chunk_id})-[:TAGGED]->(t:Tag)
WHERE t.side = 'corpus'
RETURN c.id AS chunk_id, t.id AS id, t.name AS name, t.class AS class
ORDER BY chunk_id, id
