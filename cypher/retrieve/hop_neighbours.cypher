// Score propagation, second hop, one round trip (kbgraph.query.propagation):
// 'Hop': chunks sharing an entity with a chunk of $entity_hop_ids (a -MENTIONS-> e <-MENTIONS- b), through
//        entities mentioned by at most $max_degree chunks, with the entity's degree;
// 'TitleHop': from a chunk of $title_hop_ids to the chunks of the document whose title it names (a -MENTIONS->
//        TITLE entity e, a document d titled e.name, d's chunks that mention e too). The WITH clauses fix the
//        plan: FalkorDB otherwise scans every Entity and Document (34 ms -> 0.4 ms on 2Wiki);
// 'Next': reading-order neighbours of the chunks of $next_ids (NEXT in either direction).
UNWIND $entity_hop_ids AS chunk_id
MATCH (a:Chunk {id: chunk_id})-[:MENTIONS]->(e:Entity)
MATCH (e)<-[:MENTIONS]-(b:Chunk)
WITH a, e, collect(b.id) AS neighbours
WHERE size(neighbours) <= $max_degree
UNWIND neighbours AS neighbour
WITH a, e, neighbour, size(neighbours) AS degree
WHERE neighbour <> a.id
RETURN 'Hop' AS kind, a.id AS from_id, e.id AS via, e.name AS text, neighbour AS chunk_id, degree
UNION ALL
UNWIND $title_hop_ids AS chunk_id
MATCH (a:Chunk {id: chunk_id})
WITH a
MATCH (a)-[:MENTIONS]->(e:Entity)
WHERE e.type = 'TITLE'
WITH a, e
MATCH (d:Document {title: e.name})
WHERE d.id <> a.document_id
WITH a, e, d
MATCH (b:Chunk {document_id: d.id})
WHERE (b)-[:MENTIONS]->(e)
RETURN 'TitleHop' AS kind, a.id AS from_id, e.id AS via, e.name AS text, b.id AS chunk_id, 1 AS degree
UNION ALL
UNWIND $next_ids AS chunk_id
MATCH (a:Chunk {id: chunk_id})-[:NEXT]-(b:Chunk)
RETURN 'Next' AS kind, a.id AS from_id, a.id AS via, '' AS text, b.id AS chunk_id, 1 AS degree
