// Full-text seeds of score propagation, one round trip: the top-$k matches of $query on Chunk.text and on
// Entity.name ($query is built from escaped words by kbgraph).
CALL db.index.fulltext.queryNodes('chunk_text', $query, {limit: $k}) YIELD node, score
RETURN 'Chunk' AS layer, node.id AS id, score, node.text AS text
UNION ALL
CALL db.index.fulltext.queryNodes('entity_name', $query, {limit: $k}) YIELD node, score
RETURN 'Entity' AS layer, node.id AS id, score, node.name AS text
