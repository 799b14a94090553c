// benchmarks.store_bytes: the properties named in $properties (a map, each key to null) removed from every node
// of label $label.
MATCH (n)
WHERE $label IN labels(n)
SET n += $properties
