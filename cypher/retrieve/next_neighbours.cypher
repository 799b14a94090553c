// Reading-order neighbours of the given chunks (NEXT in either direction).
UNWIND $ids AS chunk_id
MATCH (a:Chunk {id: chunk_id})-[:NEXT]-(b:Chunk)
RETURN a.id AS from_id, b.id AS chunk_id
