// The Neo4j 5 dialect's fragments: the pieces of a statement that differ between stores, named in a statement as
// {{name}} or {{name: arg, ...}} and filled in when it is loaded (kbgraph.cypher; the format is in its docstring).
// Every dialect defines the same fragments with the same parameters (tests/unit/test_cypher_fragments.py); a
// parameter is replaced by the Cypher text the statement gives (a variable, a $parameter, a name), never a value.

// --- vectors -------------------------------------------------------------------------------------------------------
// A vector value from a list of floats (a $parameter or a row's field), as properties and procedures take it:
// Neo4j takes the list itself.
{{vector: list}} = {{list}}

// The store's vector score between a stored vector and a list of floats, on the scale its vector index reports
// (GraphStore._vector_similarity turns it into the cosine): Neo4j's (1 + cos) / 2 in [0, 1], higher is nearer.
{{vector_score: stored, list}} = vector.similarity.cosine({{stored}}, {{list}})

// The cosine in [-1, 1] of a stored vector and a list of floats.
{{cosine: stored, list}} = 2.0 * vector.similarity.cosine({{stored}}, {{list}}) - 1.0

// A vector score (of {{vector_score}} or a vector index) as the cosine in [-1, 1]: GraphStore._vector_similarity.
{{vector_similarity: score}} = 2.0 * {{score}} - 1.0

// The order of vector scores that puts the nearest first.
{{best_first}} = DESC

// The top-k nodes of a vector index, yielding node, score: label and index name the index (Neo4j reads the
// index's name), query is a list of floats.
{{vector_query: label, index, k, query}} = CALL db.index.vector.queryNodes({{index}}, {{k}}, {{query}}) YIELD node, score

// --- full text -----------------------------------------------------------------------------------------------------
// The top-k nodes of a full-text index by score, yielding node, score: label and index name the index (Neo4j reads
// the index's name and cuts to k itself).
{{fulltext_query: label, index, query, k}} = CALL db.index.fulltext.queryNodes({{index}}, {{query}}, {limit: {{k}}}) YIELD node, score

// --- a Document's vector -------------------------------------------------------------------------------------------
// The property ingest/upsert_document writes a Document's vector to: on Neo4j `embedding` (indexed at once).
{{document_vector_property}} = embedding

// The SET items of ingest/mark_documents_complete that make Document d complete.
{{complete_document: d}} = {{d}}.status = 'complete'

// --- schema (GraphStore.ensure_schema, GraphStore.clear) -----------------------------------------------------------
// Uniqueness of label.property; name: the index's name (snake-case label and property).
{{unique_index: name, label, property}} = CREATE CONSTRAINT {{name}} IF NOT EXISTS FOR (n:{{label}}) REQUIRE n.{{property}} IS UNIQUE

// A range index on label.property.
{{range_index: name, label, property}} = CREATE INDEX {{name}} IF NOT EXISTS FOR (n:{{label}}) ON (n.{{property}})

// A cosine vector index on label.property of $dimension.
{{vector_index: name, label, property}} =
CREATE VECTOR INDEX {{name}} IF NOT EXISTS
FOR (n:{{label}}) ON (n.{{property}})
OPTIONS {indexConfig: {`vector.dimensions`: $dimension, `vector.similarity_function`: 'cosine'}}

// Drop the vector index on label.property.
{{drop_vector_index: name, label, property}} = DROP INDEX {{name}} IF EXISTS

// A full-text index on label.property.
{{fulltext_index: name, label, property}} = CREATE FULLTEXT INDEX {{name}} IF NOT EXISTS FOR (n:{{label}}) ON EACH [n.{{property}}]

// Every index, one row each with the store's own columns (GraphStore._list_vector_dimensions reads them): name,
// type, labels, properties, options.
{{indexes}} =
SHOW INDEXES YIELD name, type, labelsOrTypes, properties, options
RETURN name, type, labelsOrTypes AS labels, properties, options

// --- document filters ----------------------------------------------------------------------------------------------
// The slot of a filter's predicate in a statement (cypher/filters/documents): `true` as loaded (and linted);
// kbgraph.cypher.compose puts the predicate kbgraph.filters.compile made there instead.
{{predicate}} = true
