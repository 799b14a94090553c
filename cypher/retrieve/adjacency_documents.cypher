// One page of documents for the in-memory adjacency of score propagation (kbgraph.query.propagation.adjacency): in document
// id order after $after, at most $limit rows, each with its title and status (the title hop goes to the chunks
// of a 'complete' document whose title a chunk mentions).
MATCH (d:Document)
WHERE d.id > $after
WITH d
ORDER BY d.id
LIMIT $limit
RETURN d.id AS id, d.title AS title, d.status AS status
ORDER BY id
