// benchmarks.store_bytes: drop the range index on `$label`.`$property`. Cypher takes no label or property as a
// parameter: benchmarks.common ``statement`` writes the backticked `$label` and `$property` as the identifiers
// the benchmark gives (each a plain identifier, else ValueError).
DROP INDEX FOR (n:`$label`) ON (n.`$property`)
