// The conditions of a document filter (kbgraph.filters.compile): each a boolean on node `node` (the Document, `d`)
// whose key and values are $parameters (`key` is a parameter holding the property's name, read as node[$key]:
// no property name is ever written into a statement's text). The compiler joins them with AND, OR and NOT and
// puts the predicate into a statement's {{predicate}} (cypher/filters/). One definition for every dialect: Neo4j 5
// and FalkorDB both read node[$key]; a condition on a key a Document lacks is null, so false.

// key equals value; for a key holding a list of text: the list contains value.
{{filter_eq: node, key, value}} = {{node}}[{{key}}] = {{value}}
{{filter_contains: node, key, value}} = {{value}} IN {{node}}[{{key}}]

// key equals one of values (a list parameter); for a list key: the lists share one.
{{filter_in: node, key, values}} = {{node}}[{{key}}] IN {{values}}
{{filter_overlaps: node, key, values}} = any(x IN {{node}}[{{key}}] WHERE x IN {{values}})

// The bounds of a range, one condition each.
{{filter_gte: node, key, value}} = {{node}}[{{key}}] >= {{value}}
{{filter_gt: node, key, value}} = {{node}}[{{key}}] > {{value}}
{{filter_lte: node, key, value}} = {{node}}[{{key}}] <= {{value}}
{{filter_lt: node, key, value}} = {{node}}[{{key}}] < {{value}}

// key (text: the compiler refuses a key that holds anything else, which FalkorDB would reject) starts with value.
{{filter_prefix: node, key, value}} = {{node}}[{{key}}] STARTS WITH {{value}}

// The Document has key.
{{filter_exists: node, key}} = {{node}}[{{key}}] IS NOT NULL
