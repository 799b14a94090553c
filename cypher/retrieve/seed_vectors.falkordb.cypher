// Layer seeds of score propagation (kbgraph.query.seeding), one round trip: the vector top-$k of every
// vector index; a layer of $static_layers (setting static_layers) is searched with $static_embedding (the static
// model's question vector), the others with $embedding: each vector is sent once (six copies of the question's
// vector in the statement's text cost FalkorDB ~0.5 ms of a ~2.4 ms read).
// score: cosine distance 1 - cos, as db.idx.vector.queryNodes reports it.
// Chunk hits: no text (the Chunk term names its chunk, not a text: 20 chunk texts were most of the reply's
// bytes); served chunks only (after the index's top $k): a chunk is left out when its Document is not
// 'complete' (still being written, or left 'writing' by a killed run; see ingest/mark_documents_complete).
CALL db.idx.vector.queryNodes('Document', 'embedding', $k, vecf32(CASE WHEN 'Document' IN $static_layers THEN $static_embedding ELSE $embedding END)) YIELD node, score
RETURN 'Document' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
CALL db.idx.vector.queryNodes('Section', 'embedding', $k, vecf32(CASE WHEN 'Section' IN $static_layers THEN $static_embedding ELSE $embedding END)) YIELD node, score
RETURN 'Section' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, vecf32($embedding)) YIELD node, score
OPTIONAL MATCH (d:Document {id: node.document_id})
WITH node, score, d
WHERE coalesce(d.status, 'complete') = 'complete'
RETURN 'Chunk' AS layer, node.id AS id, score, '' AS text
UNION ALL
CALL db.idx.vector.queryNodes('AtomicQuestion', 'embedding', $k, vecf32(CASE WHEN 'AtomicQuestion' IN $static_layers THEN $static_embedding ELSE $embedding END)) YIELD node, score
RETURN 'AtomicQuestion' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
CALL db.idx.vector.queryNodes('Triple', 'embedding', $k, vecf32(CASE WHEN 'Triple' IN $static_layers THEN $static_embedding ELSE $embedding END)) YIELD node, score
RETURN 'Triple' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
CALL db.idx.vector.queryNodes('Entity', 'embedding', $k, vecf32(CASE WHEN 'Entity' IN $static_layers THEN $static_embedding ELSE $embedding END)) YIELD node, score
RETURN 'Entity' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
