// Full-text seeds of score propagation on Entity.name: the top-$k matches of $query ($query is built from escaped
// words by kbgraph); read at once with retrieve/seed_fulltext_chunk.
CALL db.index.fulltext.queryNodes('entity_name', $query, {limit: $k}) YIELD node, score
RETURN 'Entity' AS layer, node.id AS id, score, node.name AS text
