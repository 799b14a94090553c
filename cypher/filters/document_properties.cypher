// Every complete Document's properties but its vectors and summary (kbgraph.filters.catalogue): the metadata
// keys filters may name and the kinds of value each holds.
MATCH (d:Document)
WHERE coalesce(d.status, 'complete') = 'complete'
RETURN d.id AS id, d {.*, embedding: null, pending_embedding: null, summary: null} AS properties
ORDER BY id
