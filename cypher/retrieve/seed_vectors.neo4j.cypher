// Layer seeds of score propagation (kbgraph.query.seeding), one round trip: the vector top-$k of every
// vector index; each layer's query vector is its own parameter ($<layer>_embedding: the static model's for
// the layers of setting static_layers, else the same as $embedding), the Chunk layer's is $embedding.
// score: Neo4j's cosine score (1 + cos) / 2, as db.index.vector.queryNodes reports it.
// Chunk hits: no text (the Chunk term names its chunk, not a text: 20 chunk texts were most of the reply's
// bytes); served chunks only (after the index's top $k): a chunk is left out when its Document is not
// 'complete' (still being written, or left 'writing' by a killed run; see ingest/mark_documents_complete).
CALL db.index.vector.queryNodes('document_embedding', $k, $document_embedding) YIELD node, score
RETURN 'Document' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
CALL db.index.vector.queryNodes('section_embedding', $k, $section_embedding) YIELD node, score
RETURN 'Section' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
CALL db.index.vector.queryNodes('chunk_embedding', $k, $embedding) YIELD node, score
OPTIONAL MATCH (d:Document {id: node.document_id})
WITH node, score, d
WHERE coalesce(d.status, 'complete') = 'complete'
RETURN 'Chunk' AS layer, node.id AS id, score, '' AS text
UNION ALL
CALL db.index.vector.queryNodes('atomic_question_embedding', $k, $atomic_question_embedding) YIELD node, score
RETURN 'AtomicQuestion' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
CALL db.index.vector.queryNodes('triple_embedding', $k, $triple_embedding) YIELD node, score
RETURN 'Triple' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
CALL db.index.vector.queryNodes('entity_embedding', $k, $entity_embedding) YIELD node, score
RETURN 'Entity' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
