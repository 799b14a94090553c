// Every document with its source URI (for pruning documents whose source vanished).
MATCH (d:Document)
RETURN d.id AS id, d.uri AS uri, d.status AS status
