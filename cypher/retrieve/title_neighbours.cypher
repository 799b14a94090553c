// Second hop along a title link: from a chunk to the chunks of the document whose title it names
// (chunk -MENTIONS-> TITLE entity, and that entity is the title of the target chunk's document).
UNWIND $ids AS chunk_id
MATCH (a:Chunk {id: chunk_id})-[:MENTIONS]->(e:Entity {type: 'TITLE'})<-[:MENTIONS]-(b:Chunk)
WHERE b.id <> a.id AND b.document_id <> a.document_id
MATCH (d:Document {id: b.document_id})
WHERE d.title = e.name
RETURN a.id AS from_id, e.id AS via, e.name AS text, b.id AS chunk_id
