// Layer seeds of score propagation (kbgraph.query.propagation.seeding), one round trip: the vector top-$k of every
// vector index; a layer of $static_layers (setting static_layers) is searched with $static_embedding (the static
// model's question vector), the others with $embedding: each vector is sent once (six copies of the question's
// vector in the statement's text cost FalkorDB ~0.5 ms of a ~2.4 ms read).
// score: the store's vector score ({{vector_score}}: cypher/fragments/), as its vector index reports it.
// Chunk hits: no text (the Chunk term names its chunk, not a text: 20 chunk texts were most of the reply's
// bytes); served chunks only (after the index's top $k): a chunk is left out when its Document is not
// 'complete' (still being written, or left 'writing' by a killed run; see ingest/mark_documents_complete).
// In a document scope ($documents: kbgraph.store.scope) the layers of documents (all but Entity) are searched for
// their top $scoped_k and keep the scope's nodes only (the caller over-fetches and cuts to its k); Entity, of no
// one document, keeps its top $k; the Chunk index reads its top $chunk_k (default $scoped_k; $k when the caller
// has the scope's chunk seeds from memory). Out of a scope $scoped_k = $chunk_k = $k.
{{vector_query: 'Document', 'document_embedding', $scoped_k, CASE WHEN 'Document' IN $static_layers THEN $static_embedding ELSE $embedding END}}
WITH node, score
WHERE $documents IS NULL OR node.id IN $documents
RETURN 'Document' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
{{vector_query: 'Section', 'section_embedding', $scoped_k, CASE WHEN 'Section' IN $static_layers THEN $static_embedding ELSE $embedding END}}
WITH node, score
WHERE $documents IS NULL OR node.document_id IN $documents
RETURN 'Section' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
{{vector_query: 'Chunk', 'chunk_embedding', $chunk_k, $embedding}}
OPTIONAL MATCH (d:Document {id: node.document_id})
WITH node, score, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
RETURN 'Chunk' AS layer, node.id AS id, score, '' AS text
UNION ALL
{{vector_query: 'AtomicQuestion', 'atomic_question_embedding', $scoped_k, CASE WHEN 'AtomicQuestion' IN $static_layers THEN $static_embedding ELSE $embedding END}}
WITH node, score
WHERE $documents IS NULL OR node.document_id IN $documents
RETURN 'AtomicQuestion' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
{{vector_query: 'Triple', 'triple_embedding', $scoped_k, CASE WHEN 'Triple' IN $static_layers THEN $static_embedding ELSE $embedding END}}
WITH node, score
WHERE $documents IS NULL OR node.document_id IN $documents
RETURN 'Triple' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
{{vector_query: 'Entity', 'entity_embedding', $k, CASE WHEN 'Entity' IN $static_layers THEN $static_embedding ELSE $embedding END}}
RETURN 'Entity' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
