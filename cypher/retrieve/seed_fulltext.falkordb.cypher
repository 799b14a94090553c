// Full-text seeds of score propagation, one round trip: the top-$k matches of $query on Chunk.text and on
// Entity.name ($query is built from escaped words by kbgraph). Rows are cut to $k before projection.
// Chunk hits: served chunks only (after the top $k): a chunk is left out when its Document is not 'complete'
// (still being written, or left 'writing' by a killed run; see ingest/mark_documents_complete).
CALL db.idx.fulltext.queryNodes('Chunk', $query) YIELD node, score
WITH node, score ORDER BY score DESC LIMIT $k
OPTIONAL MATCH (d:Document {id: node.document_id})
WITH node, score, d
WHERE coalesce(d.status, 'complete') = 'complete'
RETURN 'Chunk' AS layer, node.id AS id, score, node.text AS text
UNION ALL
CALL db.idx.fulltext.queryNodes('Entity', $query) YIELD node, score
WITH node, score ORDER BY score DESC LIMIT $k
RETURN 'Entity' AS layer, node.id AS id, score, node.name AS text
