// Knowledge atomizing (PIKE-RAG §5.3.1): AtomicQuestion nodes and HAS_QUESTION from their Chunk.
UNWIND $rows AS row
MATCH (c:Chunk {id: row.chunk_id})
MERGE (q:AtomicQuestion {id: row.id})
SET q.text = row.text, q.kind = row.kind, q.document_id = c.document_id, q.embedding = {{vector: row.embedding}}
MERGE (c)-[:HAS_QUESTION]->(q)
