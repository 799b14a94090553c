// Score propagation, second hop, one round trip (kbgraph.query.propagation.propagate):
// 'Hop': chunks sharing an entity with a source chunk of $entity_hop_sources ([{id, score: its S1}]) (a -MENTIONS->
//        e <-MENTIONS- b), through entities mentioned by at most $max_degree chunks: one row per reached chunk,
//        its best term S1(a) * specificity / log2(1 + degree(e)) (the formula's max; fewer rows: Neo4j's driver pays
//        per row). specificity is 1 within a document; from one document to another it is the entity's IDF over
//        the $document_count documents, log(N / documents(e)), over $specific_idf, at most 1 (0 when e is in every
//        document: a hop through a generic entity does not leave its document); $specific_idf 0 = 1 everywhere;
// 'TitleHop': from a chunk of $title_hop_ids to the chunks of the document whose title it names (a -MENTIONS->
//        TITLE entity e, a document d titled e.name, d's chunks that mention e too). The WITH clauses fix the
//        plan: FalkorDB otherwise scans every Entity and Document (34 ms -> 0.4 ms on 2Wiki);
// 'Next': reading-order neighbours of the chunks of $next_ids (NEXT in either direction);
// 'TripleHop': from the question's entities $triple_hop_seeds ([{id, sim}]) along their triples (s -RELATED-> o, one
//        relationship per Triple, subject to object) to the chunks that mention the object o, through objects
//        mentioned by at most $max_degree chunks: one row per reached chunk, its best term sim / log2(1 + degree(o))
//        (a bridge named by a relation of the question's entity, not only by co-mention with a top chunk).
// Each row also gives the reached chunk's document title when $with_titles (the learned ranker's title
// feature) and, when $with_similarity, its exact similarity to the question (score: the store's vector score, as
// retrieve/chunk_similarity gives it; null without an embedding): the exact Chunk term of the second
// rescoring, without a statement of its own.
// Reached chunks are served chunks only: a chunk is left out when its Document is not 'complete' (still being
// written, or left 'writing' by a killed run; see ingest/mark_documents_complete), looked up once per reached chunk
// after the aggregation (a WITH before it keeps FalkorDB from scanning every Chunk). An entity's degree counts every
// chunk that mentions it.
UNWIND $entity_hop_sources AS source
MATCH (a:Chunk {id: source.id})-[:MENTIONS]->(e:Entity)
MATCH (e)<-[:MENTIONS]-(b:Chunk)
WHERE $documents IS NULL OR b.document_id IN $documents
WITH source.id AS from_id, source.score AS s1, a.document_id AS from_document, e, collect(b) AS neighbours,
     count(DISTINCT b.document_id) AS documents
WHERE size(neighbours) <= $max_degree
UNWIND neighbours AS neighbour
WITH from_id, s1, e, neighbour, size(neighbours) AS degree,
     CASE WHEN neighbour.document_id = from_document OR $specific_idf <= 0 THEN 1.0
          WHEN documents >= $document_count THEN 0.0
          WHEN log(toFloat($document_count) / documents) >= $specific_idf THEN 1.0
          ELSE log(toFloat($document_count) / documents) / $specific_idf END AS specificity
WHERE neighbour.id <> from_id AND specificity > 0
WITH neighbour, from_id, e.id AS via, e.name AS text, degree, specificity,
     s1 * specificity * log(2.0) / log(1.0 + degree) AS score
ORDER BY score DESC, from_id, via
WITH neighbour, collect([from_id, via, text, degree, specificity])[0] AS best
OPTIONAL MATCH (d:Document {id: neighbour.document_id})
WITH neighbour, best, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
RETURN 'Hop' AS kind, best[0] AS from_id, best[1] AS via, best[2] AS text, neighbour.id AS chunk_id, best[3] AS degree,
       best[4] AS specificity,
       CASE WHEN $with_titles THEN d.title END AS title,
       CASE WHEN $with_similarity AND neighbour.embedding IS NOT NULL
       THEN {{vector_score: neighbour.embedding, $embedding}}
       END AS score
UNION ALL
UNWIND $title_hop_ids AS chunk_id
MATCH (a:Chunk {id: chunk_id})
WITH a
MATCH (a)-[:MENTIONS]->(e:Entity)
WHERE e.type = 'TITLE'
WITH a, e
MATCH (d:Document {title: e.name})
WHERE d.id <> a.document_id AND d.status = 'complete' AND ($documents IS NULL OR d.id IN $documents)
WITH a, e, d
MATCH (b:Chunk {document_id: d.id})
WHERE (b)-[:MENTIONS]->(e)
RETURN 'TitleHop' AS kind, a.id AS from_id, e.id AS via, e.name AS text, b.id AS chunk_id, 1 AS degree,
       1.0 AS specificity,
       CASE WHEN $with_titles THEN d.title END AS title,
       CASE WHEN $with_similarity AND b.embedding IS NOT NULL THEN {{vector_score: b.embedding, $embedding}}
       END AS score
UNION ALL
UNWIND $next_ids AS chunk_id
MATCH (a:Chunk {id: chunk_id})-[:NEXT]-(b:Chunk)
WITH a, b
OPTIONAL MATCH (d:Document {id: b.document_id})
WITH a, b, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
RETURN 'Next' AS kind, a.id AS from_id, a.id AS via, '' AS text, b.id AS chunk_id, 1 AS degree,
       1.0 AS specificity,
       CASE WHEN $with_titles THEN d.title END AS title,
       CASE WHEN $with_similarity AND b.embedding IS NOT NULL THEN {{vector_score: b.embedding, $embedding}}
       END AS score
UNION ALL
UNWIND $triple_hop_seeds AS seed
MATCH (s:Entity {id: seed.id})-[:RELATED]->(o:Entity)
WITH DISTINCT seed.id AS from_id, seed.sim AS sim, o
MATCH (o)<-[:MENTIONS]-(b:Chunk)
WHERE $documents IS NULL OR b.document_id IN $documents
WITH from_id, sim, o, collect(b) AS reached
WHERE size(reached) <= $max_degree
UNWIND reached AS b
WITH b, from_id, o.id AS via, o.name AS text, size(reached) AS degree,
     sim * log(2.0) / log(1.0 + size(reached)) AS score
ORDER BY score DESC, from_id, via
WITH b, collect([from_id, via, text, degree])[0] AS best
OPTIONAL MATCH (d:Document {id: b.document_id})
WITH b, best, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
RETURN 'TripleHop' AS kind, best[0] AS from_id, best[1] AS via, best[2] AS text, b.id AS chunk_id, best[3] AS degree,
       1.0 AS specificity,
       CASE WHEN $with_titles THEN d.title END AS title,
       CASE WHEN $with_similarity AND b.embedding IS NOT NULL THEN {{vector_score: b.embedding, $embedding}}
       END AS score
