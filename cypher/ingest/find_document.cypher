// A document by id or by source URI.
MATCH (d:Document)
WHERE d.id = $key OR d.uri = $key
RETURN d.id AS id, d.uri AS uri, d.title AS title
