// benchmarks.scale_out: the Entity ids held by more than one node (concurrent writers must not make any).
MATCH (e:Entity)
WITH e.id AS id, count(*) AS n
WHERE n > 1
RETURN id
