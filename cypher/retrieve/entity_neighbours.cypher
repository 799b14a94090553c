// Second hop: chunks that share an entity with the given chunks (chunk -MENTIONS-> entity <-MENTIONS- chunk),
// through entities mentioned by at most $max_degree chunks.
UNWIND $ids AS chunk_id
MATCH (a:Chunk {id: chunk_id})-[:MENTIONS]->(e:Entity)
MATCH (e)<-[:MENTIONS]-(b:Chunk)
WITH a, e, collect(b.id) AS neighbours
WHERE size(neighbours) <= $max_degree
UNWIND neighbours AS neighbour
WITH a, e, neighbour, size(neighbours) AS degree
WHERE neighbour <> a.id
RETURN a.id AS from_id, e.id AS via, e.name AS text, neighbour AS chunk_id, degree
