// Reading order: NEXT between consecutive chunks of a document.
UNWIND $rows AS row
MATCH (a:Chunk {id: row.from_id})
MATCH (b:Chunk {id: row.to_id})
MERGE (a)-[:NEXT]->(b)
