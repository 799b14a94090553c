// Full-text seeds of score propagation on Chunk.text: the top-$k matches of $query ($query is built from escaped
// words by kbgraph). A statement of its own, so that the seeding reads it at once with the Entity.name seeds
// (retrieve/seed_fulltext_entity).
// Served chunks only (after the top $k): a chunk is left out when its Document is not 'complete' (still being
// written, or left 'writing' by a killed run; see ingest/mark_documents_complete).
CALL db.index.fulltext.queryNodes('chunk_text', $query, {limit: $k}) YIELD node, score
OPTIONAL MATCH (d:Document {id: node.document_id})
WITH node, score, d
WHERE coalesce(d.status, 'complete') = 'complete'
RETURN 'Chunk' AS layer, node.id AS id, score, node.text AS text
