// Full-text seeds of score propagation, one round trip: the top-$k matches of $query on Chunk.text and on
// Entity.name ($query is built from escaped words by kbgraph). Rows are cut to $k before projection.
CALL db.idx.fulltext.queryNodes('Chunk', $query) YIELD node, score
WITH node, score ORDER BY score DESC LIMIT $k
RETURN 'Chunk' AS layer, node.id AS id, score, node.text AS text
UNION ALL
CALL db.idx.fulltext.queryNodes('Entity', $query) YIELD node, score
WITH node, score ORDER BY score DESC LIMIT $k
RETURN 'Entity' AS layer, node.id AS id, score, node.name AS text
