// Score propagation, one round trip: the chunks each seeded node leads to (PIKE-RAG Fig. 8, Fig. 11 path (b)):
// atomic questions -> their chunk (HAS_QUESTION), triples -> the chunk they were EXTRACTED_FROM, entities
// (vector seeds $entity_seeds, full-text seeds $entity_text_seeds: [{id, sim}]) -> the chunks that MENTION them,
// one row per chunk for its most similar entity (the formula's max; entities in more than $max_degree chunks
// carry no signal; rows, not traversals, are what costs on Neo4j's driver), sections -> the chunks under them
// (HAS_CHUNK). The Document layer, a prior on chunks scored already, is retrieve/document_priors: returning every
// chunk of a seeded document here cost most of this statement's time.
// Served chunks only: a chunk is left out when its Document is not 'complete' (still being written, or left
// 'writing' by a killed run; see ingest/mark_documents_complete).
// The check is a lookup of the chunk's Document by id after a WITH (as a filter on the chunk inside the MATCH,
// FalkorDB would start from a scan of every Chunk), once per chunk reached; an entity's degree counts every chunk
// that mentions it.
UNWIND $question_ids AS node_id
MATCH (c:Chunk)-[:HAS_QUESTION]->(n:AtomicQuestion {id: node_id})
WITH n, c
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH n, c, d
WHERE coalesce(d.status, 'complete') = 'complete'
RETURN 'AtomicQuestion' AS layer, n.id AS via, c.id AS chunk_id, 1 AS degree
UNION ALL
UNWIND $triple_ids AS node_id
MATCH (n:Triple {id: node_id})-[:EXTRACTED_FROM]->(c:Chunk)
WITH n, c
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH n, c, d
WHERE coalesce(d.status, 'complete') = 'complete'
RETURN 'Triple' AS layer, n.id AS via, c.id AS chunk_id, 1 AS degree
UNION ALL
UNWIND $entity_seeds AS seed
MATCH (n:Entity {id: seed.id})<-[:MENTIONS]-(c:Chunk)
WITH seed.id AS node_id, seed.sim AS sim, collect(c) AS chunks
WHERE size(chunks) <= $max_degree
UNWIND chunks AS c
WITH c, node_id, sim, size(chunks) AS degree
ORDER BY sim DESC, node_id
WITH c, collect([node_id, degree])[0] AS best
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH c, best, d
WHERE coalesce(d.status, 'complete') = 'complete'
RETURN 'Entity' AS layer, best[0] AS via, c.id AS chunk_id, best[1] AS degree
UNION ALL
UNWIND $entity_text_seeds AS seed
MATCH (n:Entity {id: seed.id})<-[:MENTIONS]-(c:Chunk)
WITH seed.id AS node_id, seed.sim AS sim, collect(c) AS chunks
WHERE size(chunks) <= $max_degree
UNWIND chunks AS c
WITH c, node_id, sim, size(chunks) AS degree
ORDER BY sim DESC, node_id
WITH c, collect([node_id, degree])[0] AS best
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH c, best, d
WHERE coalesce(d.status, 'complete') = 'complete'
RETURN 'EntityText' AS layer, best[0] AS via, c.id AS chunk_id, best[1] AS degree
UNION ALL
UNWIND $section_ids AS node_id
MATCH (n:Section {id: node_id})-[:HAS_CHUNK]->(c:Chunk)
WITH n, c
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH n, c, d
WHERE coalesce(d.status, 'complete') = 'complete'
RETURN 'Section' AS layer, n.id AS via, c.id AS chunk_id, 1 AS degree
