// Score propagation, one round trip: the chunks each seeded node leads to (PIKE-RAG Fig. 8, Fig. 11 path (b)):
// atomic questions -> their chunk (HAS_QUESTION), triples -> the chunk they were EXTRACTED_FROM, entities
// (vector seeds $entity_seeds, full-text seeds $entity_text_seeds: [{id, sim}]) -> the chunks that MENTION them,
// one row per chunk for its most similar entity (the formula's max; entities in more than $max_degree chunks
// carry no signal; rows, not traversals, are what costs on Neo4j's driver), sections -> the chunks under them
// (HAS_CHUNK), documents -> their chunks (Chunk.document_id).
UNWIND $question_ids AS node_id
MATCH (c:Chunk)-[:HAS_QUESTION]->(n:AtomicQuestion {id: node_id})
RETURN 'AtomicQuestion' AS layer, n.id AS via, c.id AS chunk_id, 1 AS degree
UNION ALL
UNWIND $triple_ids AS node_id
MATCH (n:Triple {id: node_id})-[:EXTRACTED_FROM]->(c:Chunk)
RETURN 'Triple' AS layer, n.id AS via, c.id AS chunk_id, 1 AS degree
UNION ALL
UNWIND $entity_seeds AS seed
MATCH (n:Entity {id: seed.id})<-[:MENTIONS]-(c:Chunk)
WITH seed.id AS node_id, seed.sim AS sim, collect(c.id) AS chunk_ids
WHERE size(chunk_ids) <= $max_degree
UNWIND chunk_ids AS chunk_id
WITH chunk_id, node_id, sim, size(chunk_ids) AS degree
ORDER BY sim DESC, node_id
WITH chunk_id, collect([node_id, degree])[0] AS best
RETURN 'Entity' AS layer, best[0] AS via, chunk_id, best[1] AS degree
UNION ALL
UNWIND $entity_text_seeds AS seed
MATCH (n:Entity {id: seed.id})<-[:MENTIONS]-(c:Chunk)
WITH seed.id AS node_id, seed.sim AS sim, collect(c.id) AS chunk_ids
WHERE size(chunk_ids) <= $max_degree
UNWIND chunk_ids AS chunk_id
WITH chunk_id, node_id, sim, size(chunk_ids) AS degree
ORDER BY sim DESC, node_id
WITH chunk_id, collect([node_id, degree])[0] AS best
RETURN 'EntityText' AS layer, best[0] AS via, chunk_id, best[1] AS degree
UNION ALL
UNWIND $section_ids AS node_id
MATCH (n:Section {id: node_id})-[:HAS_CHUNK]->(c:Chunk)
RETURN 'Section' AS layer, n.id AS via, c.id AS chunk_id, 1 AS degree
UNION ALL
UNWIND $document_ids AS node_id
MATCH (c:Chunk {document_id: node_id})
RETURN 'Document' AS layer, node_id AS via, c.id AS chunk_id, 1 AS degree
