// The complete Documents a filter allows (kbgraph.query.scope): {{predicate}} is the filter compiled by
// kbgraph.filters.compile (conditions of cypher/fragments/filters.cypher on d, every key and value a $parameter),
// put in by kbgraph.cypher.compose; without one (and when linted) it is `true`: every complete Document.
MATCH (d:Document)
WHERE coalesce(d.status, 'complete') = 'complete' AND ({{predicate}})
RETURN d.id AS id
ORDER BY id
