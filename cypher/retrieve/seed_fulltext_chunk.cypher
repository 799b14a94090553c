// Full-text seeds of score propagation on Chunk.text: the top-$k matches of $query ($query is built from escaped
// words by kbgraph), cut to $k before projection. A statement of its own, so that the seeding reads it at once with
// the Entity.name seeds (retrieve/seed_fulltext_entity; on 2Wiki 11.0 -> 7.5 ms p50 for the two on FalkorDB).
// Served chunks only (after the top $k): a chunk is left out when its Document is not 'complete' (still being
// written, or left 'writing' by a killed run; see ingest/mark_documents_complete).
{{fulltext_query: 'Chunk', 'chunk_text', $query, $k}}
OPTIONAL MATCH (d:Document {id: node.document_id})
WITH node, score, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
RETURN 'Chunk' AS layer, node.id AS id, score, node.text AS text
