// Corpus tag collection (PIKE-RAG §5.2.2): (:Chunk)-[:TAGGED]->(:Tag) for each of $rows ([{chunk_id, tag_id}]).
UNWIND $rows AS row
MATCH (c:Chunk {id: row.chunk_id})
MATCH (t:Tag {id: row.tag_id})
MERGE (c)-[r:TAGGED]->(t)
RETURN count(r) AS linked
