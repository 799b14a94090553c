// Full-text seeds of score propagation on Entity.name: the top-$k matches of $query ($query is built from escaped
// words by kbgraph), cut to $k before projection; read at once with retrieve/seed_fulltext_chunk.
{{fulltext_query: 'Entity', 'entity_name', $query, $k}}
RETURN 'Entity' AS layer, node.id AS id, score, node.name AS text
