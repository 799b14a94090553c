// benchmarks.scale_out: the ids of the Documents whose status is not 'complete'.
MATCH (d:Document)
WHERE d.status <> 'complete'
RETURN d.id AS id
