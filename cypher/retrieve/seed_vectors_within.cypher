// Layer seeds of score propagation inside a small document scope (kbgraph.query.propagation.seeding, kbgraph.store.scope):
// the exact top-$k of each layer of documents among the scope's nodes ($documents), by the store's vector score
// ({{vector_score}}: cypher/fragments/) computed for every node of the allowed documents (their document_id
// indexes), not read from the vector index: a question filtered to a few documents gets the seeds a knowledge base
// of those documents alone would give. Entity, of no one document, keeps its vector index's top $k. Rows as
// retrieve/seed_vectors (layer, id, score, text); $static_layers / $static_embedding as there; $layers: the labels
// wanted (the dense baseline: Chunk only).
MATCH (node:Document)
WHERE 'Document' IN $layers AND node.id IN $documents AND node.status = 'complete' AND node.embedding IS NOT NULL
WITH node, {{vector_score: node.embedding, CASE WHEN 'Document' IN $static_layers THEN $static_embedding ELSE $embedding END}} AS score
ORDER BY score {{best_first}}, node.id
LIMIT $k
RETURN 'Document' AS layer, node.id AS id, score, coalesce(node.title, '') AS text
UNION ALL
MATCH (node:Section)
WHERE 'Section' IN $layers AND node.document_id IN $documents AND node.embedding IS NOT NULL
WITH node, {{vector_score: node.embedding, CASE WHEN 'Section' IN $static_layers THEN $static_embedding ELSE $embedding END}} AS score
ORDER BY score {{best_first}}, node.id
LIMIT $k
RETURN 'Section' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
MATCH (node:Chunk)
WHERE 'Chunk' IN $layers AND node.document_id IN $documents AND node.embedding IS NOT NULL
WITH node, {{vector_score: node.embedding, $embedding}} AS score
ORDER BY score {{best_first}}, node.id
LIMIT $k
RETURN 'Chunk' AS layer, node.id AS id, score, '' AS text
UNION ALL
MATCH (node:AtomicQuestion)
WHERE 'AtomicQuestion' IN $layers AND node.document_id IN $documents AND node.embedding IS NOT NULL
WITH node, {{vector_score: node.embedding, CASE WHEN 'AtomicQuestion' IN $static_layers THEN $static_embedding ELSE $embedding END}} AS score
ORDER BY score {{best_first}}, node.id
LIMIT $k
RETURN 'AtomicQuestion' AS layer, node.id AS id, score, coalesce(node.text, '') AS text
UNION ALL
MATCH (node:Triple)
WHERE 'Triple' IN $layers AND node.document_id IN $documents AND node.embedding IS NOT NULL
WITH node, {{vector_score: node.embedding, CASE WHEN 'Triple' IN $static_layers THEN $static_embedding ELSE $embedding END}} AS score
ORDER BY score {{best_first}}, node.id
LIMIT $k
RETURN 'Triple' AS layer, node.id AS id, score, coalesce(node.text, '') AS text
UNION ALL
{{vector_query: 'Entity', 'entity_embedding', $k, CASE WHEN 'Entity' IN $static_layers THEN $static_embedding ELSE $embedding END}}
WITH node, score
WHERE 'Entity' IN $layers
RETURN 'Entity' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
