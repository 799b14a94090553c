// Score propagation, the first pass in one round trip (PIKE-RAG Fig. 8, Fig. 11 path (b); kbgraph.query.propagation.propagate):
// every candidate chunk the seeds lead to, with what the formula and the learned ranker need of it, so that no
// other statement is sent before the hops. Rows (layer, via, chunk_id, document_id, title, score):
// 'Chunk': each chunk of $chunk_ids (the chunks of the Chunk and full-text seeds, and BM25's hits) as itself;
// 'AtomicQuestion', 'Triple': atomic questions -> their chunk (HAS_QUESTION), triples -> the chunk they were
//   EXTRACTED_FROM;
// 'Entity', 'EntityText': entities (vector seeds $entity_seeds, full-text seeds $entity_text_seeds: [{id, sim}])
//   -> the chunks that MENTION them, one row per chunk for its most similar entity (the formula's max; entities in
//   more than $max_degree chunks carry no signal; rows, not traversals, are what costs on Neo4j's driver);
// 'Tag': mapped corpus tags ($tag_seeds: [{id, sim}], auto-tagging §5.2.2) -> the chunks TAGGED with them, one row
//   per chunk for its best tag; tags on more than $tag_max_degree chunks carry no signal;
// 'Section': sections -> the chunks under them (HAS_CHUNK), a prior for chunks scored by another row.
// The other rows name the chunk's Document (document_id when it is 'complete': the Document prior counts for such
// a document only; its title when $with_titles: the learned ranker's title feature) and, when $with_similarity,
// give the chunk's exact similarity to the question (score: the store's vector score, as retrieve/chunk_similarity gives it;
// null without an embedding): the exact Chunk term of the rescoring, read here for every candidate instead of in
// a statement of its own for the best rescore_k.
// Served chunks only: a chunk is left out when its Document is not 'complete' (still being written, or left
// 'writing' by a killed run; see ingest/mark_documents_complete). The check is a lookup of the chunk's Document by
// id after a WITH (as a filter on the chunk inside the MATCH, FalkorDB would start from a scan of every Chunk),
// once per chunk reached; an entity's or tag's degree counts every chunk linked to it.
UNWIND $chunk_ids AS node_id
MATCH (c:Chunk {id: node_id})
WITH c
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH c, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
RETURN 'Chunk' AS layer, c.id AS via, c.id AS chunk_id,
       CASE WHEN d.status = 'complete' THEN d.id END AS document_id, CASE WHEN $with_titles THEN d.title END AS title,
       CASE WHEN $with_similarity AND c.embedding IS NOT NULL THEN {{vector_score: c.embedding, $embedding}}
       END AS score
UNION ALL
UNWIND $question_ids AS node_id
MATCH (c:Chunk)-[:HAS_QUESTION]->(n:AtomicQuestion {id: node_id})
WITH n, c
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH n, c, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
RETURN 'AtomicQuestion' AS layer, n.id AS via, c.id AS chunk_id,
       CASE WHEN d.status = 'complete' THEN d.id END AS document_id, CASE WHEN $with_titles THEN d.title END AS title,
       CASE WHEN $with_similarity AND c.embedding IS NOT NULL THEN {{vector_score: c.embedding, $embedding}}
       END AS score
UNION ALL
UNWIND $triple_ids AS node_id
MATCH (n:Triple {id: node_id})-[:EXTRACTED_FROM]->(c:Chunk)
WITH n, c
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH n, c, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
RETURN 'Triple' AS layer, n.id AS via, c.id AS chunk_id,
       CASE WHEN d.status = 'complete' THEN d.id END AS document_id, CASE WHEN $with_titles THEN d.title END AS title,
       CASE WHEN $with_similarity AND c.embedding IS NOT NULL THEN {{vector_score: c.embedding, $embedding}}
       END AS score
UNION ALL
UNWIND $entity_seeds AS seed
MATCH (n:Entity {id: seed.id})<-[:MENTIONS]-(c:Chunk)
WHERE $documents IS NULL OR c.document_id IN $documents
WITH seed.id AS node_id, seed.sim AS sim, collect(c) AS chunks
WHERE size(chunks) <= $max_degree
UNWIND chunks AS c
WITH c, node_id, sim
ORDER BY sim DESC, node_id
WITH c, collect(node_id)[0] AS via
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH c, via, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
RETURN 'Entity' AS layer, via, c.id AS chunk_id,
       CASE WHEN d.status = 'complete' THEN d.id END AS document_id, CASE WHEN $with_titles THEN d.title END AS title,
       CASE WHEN $with_similarity AND c.embedding IS NOT NULL THEN {{vector_score: c.embedding, $embedding}}
       END AS score
UNION ALL
UNWIND $entity_text_seeds AS seed
MATCH (n:Entity {id: seed.id})<-[:MENTIONS]-(c:Chunk)
WHERE $documents IS NULL OR c.document_id IN $documents
WITH seed.id AS node_id, seed.sim AS sim, collect(c) AS chunks
WHERE size(chunks) <= $max_degree
UNWIND chunks AS c
WITH c, node_id, sim
ORDER BY sim DESC, node_id
WITH c, collect(node_id)[0] AS via
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH c, via, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
RETURN 'EntityText' AS layer, via, c.id AS chunk_id,
       CASE WHEN d.status = 'complete' THEN d.id END AS document_id, CASE WHEN $with_titles THEN d.title END AS title,
       CASE WHEN $with_similarity AND c.embedding IS NOT NULL THEN {{vector_score: c.embedding, $embedding}}
       END AS score
UNION ALL
UNWIND $tag_seeds AS seed
MATCH (n:Tag {id: seed.id})<-[:TAGGED]-(c:Chunk)
WHERE $documents IS NULL OR c.document_id IN $documents
WITH seed.id AS node_id, seed.sim AS sim, collect(c) AS chunks
WHERE size(chunks) <= $tag_max_degree
UNWIND chunks AS c
WITH c, node_id, sim
ORDER BY sim DESC, node_id
WITH c, collect(node_id)[0] AS via
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH c, via, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
RETURN 'Tag' AS layer, via, c.id AS chunk_id,
       CASE WHEN d.status = 'complete' THEN d.id END AS document_id, CASE WHEN $with_titles THEN d.title END AS title,
       CASE WHEN $with_similarity AND c.embedding IS NOT NULL THEN {{vector_score: c.embedding, $embedding}}
       END AS score
UNION ALL
UNWIND $section_ids AS node_id
MATCH (n:Section {id: node_id})-[:HAS_CHUNK]->(c:Chunk)
WITH n, c
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH n, c, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
RETURN 'Section' AS layer, n.id AS via, c.id AS chunk_id, null AS document_id, null AS title, null AS score
