// Layer seeds of score propagation (kbgraph.query.propagation), one round trip: the vector top-$k of every
// vector index. score: Neo4j's cosine score (1 + cos) / 2, as db.index.vector.queryNodes reports it.
CALL db.index.vector.queryNodes('document_embedding', $k, $embedding) YIELD node, score
RETURN 'Document' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
CALL db.index.vector.queryNodes('section_embedding', $k, $embedding) YIELD node, score
RETURN 'Section' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
CALL db.index.vector.queryNodes('chunk_embedding', $k, $embedding) YIELD node, score
RETURN 'Chunk' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
CALL db.index.vector.queryNodes('atomic_question_embedding', $k, $embedding) YIELD node, score
RETURN 'AtomicQuestion' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
CALL db.index.vector.queryNodes('triple_embedding', $k, $embedding) YIELD node, score
RETURN 'Triple' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
UNION ALL
CALL db.index.vector.queryNodes('entity_embedding', $k, $embedding) YIELD node, score
RETURN 'Entity' AS layer, node.id AS id, score, coalesce(node.text, node.name, node.title, node.path, '') AS text
