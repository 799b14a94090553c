// One page of entities for the in-memory adjacency of score propagation (kbgraph.query.propagation.adjacency): in entity id
// order after $after, at most $limit rows, each with its name and type (the entity hop's text, the title hop's
// TITLE entities) and the objects of its triples (RELATED, subject to object: the triple hop).
MATCH (e:Entity)
WHERE e.id > $after
WITH e
ORDER BY e.id
LIMIT $limit
RETURN e.id AS id, e.name AS name, e.type AS type, [(e)-[:RELATED]->(o:Entity) | o.id] AS related
ORDER BY id
