// One page of entities with their names in entity id order, after $after, at most $limit rows: the corpus of
// kbgraph.query.bm25's index of entity names (ENTITY_NAMES: score propagation's Entity.name full-text seeds with
// setting entity_fulltext 'bm25'), read for its fingerprint and to build it.
MATCH (e:Entity)
WHERE e.id > $after
WITH e
ORDER BY e.id
LIMIT $limit
RETURN e.id AS id, e.name AS name
ORDER BY id
