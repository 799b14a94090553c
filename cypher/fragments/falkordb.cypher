// The FalkorDB dialect's fragments: the pieces of a statement that differ between stores, named in a statement as
// {{name}} or {{name: arg, ...}} and filled in when it is loaded (kbgraph.cypher; the format is in its docstring).
// Every dialect defines the same fragments with the same parameters (tests/unit/test_cypher_fragments.py); a
// parameter is replaced by the Cypher text the statement gives (a variable, a $parameter, a name), never a value.

// --- vectors -------------------------------------------------------------------------------------------------------
// A vector value from a list of floats (a $parameter or a row's field), as properties and procedures take it:
// FalkorDB stores and searches vecf32 values, not lists.
{{vector: list}} = vecf32({{list}})

// The store's vector score between a stored vector and a list of floats, on the scale its vector index reports
// (GraphStore._vector_similarity turns it into the cosine): FalkorDB's cosine distance 1 - cos in [0, 2], lower is
// nearer.
{{vector_score: stored, list}} = vec.cosineDistance({{stored}}, vecf32({{list}}))

// The cosine in [-1, 1] of a stored vector and a list of floats.
{{cosine: stored, list}} = 1.0 - vec.cosineDistance({{stored}}, vecf32({{list}}))

// A vector score (of {{vector_score}} or a vector index) as the cosine in [-1, 1]: GraphStore._vector_similarity.
{{vector_similarity: score}} = 1.0 - {{score}}

// The order of vector scores that puts the nearest first.
{{best_first}} = ASC

// The top-k nodes of a vector index, yielding node, score: label and index name the index (FalkorDB reads the
// label; the property is `embedding`), query is a list of floats.
{{vector_query: label, index, k, query}} = CALL db.idx.vector.queryNodes({{label}}, 'embedding', {{k}}, vecf32({{query}})) YIELD node, score

// --- full text -----------------------------------------------------------------------------------------------------
// The top-k nodes of a full-text index by score, yielding node, score: label and index name the index (FalkorDB
// reads the label; the procedure yields every match, so the rows are cut to k here, before anything is projected:
// 3x faster). Ties by id: names often score alike ("Mathew" PERSON and ORG), and the index orders equal scores by
// its own document numbers, which the server renumbers when it loads the graph, so a cut inside a tie kept other
// nodes after a restart (issue 56; tests/test_restart_determinism.py).
{{fulltext_query: label, index, query, k}} =
CALL db.idx.fulltext.queryNodes({{label}}, {{query}}) YIELD node, score
WITH node, score ORDER BY score DESC, node.id LIMIT {{k}}

// --- a Document's vector -------------------------------------------------------------------------------------------
// The property ingest/upsert_document writes a Document's vector to: on FalkorDB `pending_embedding`, which becomes
// `embedding` (enters the vector index) when the document is complete: FalkorDB 4.16 loses vector-index entries of
// nodes updated after they were indexed (measured: setting `status` on 200 indexed Documents left 100 findable), so
// a Document is indexed once, complete, and never updated after.
{{document_vector_property}} = pending_embedding

// The SET items of ingest/mark_documents_complete that make Document d complete: its vector moves from
// pending_embedding to `embedding` in the same statement, so the Document enters the vector index once, complete.
{{complete_document: d}} = {{d}}.status = 'complete', {{d}}.embedding = coalesce({{d}}.pending_embedding, {{d}}.embedding), {{d}}.pending_embedding = null

// --- schema (GraphStore.ensure_schema, GraphStore.clear) -----------------------------------------------------------
// Uniqueness of label.property: a range index here, the uniqueness added by GRAPH.CONSTRAINT (FalkorDBStore);
// name (the Neo4j index's name) is not read.
{{unique_index: name, label, property}} = CREATE INDEX FOR (n:{{label}}) ON (n.{{property}})

// A range index on label.property (FalkorDB's indexes have no name).
{{range_index: name, label, property}} = CREATE INDEX FOR (n:{{label}}) ON (n.{{property}})

// A cosine vector index (HNSW) on label.property of $dimension, with $m, $ef_construction and $ef_runtime.
{{vector_index: name, label, property}} =
CREATE VECTOR INDEX FOR (n:{{label}}) ON (n.{{property}})
OPTIONS {dimension: $dimension, similarityFunction: 'cosine', M: $m, efConstruction: $ef_construction, efRuntime: $ef_runtime}

// Drop the vector index on label.property.
{{drop_vector_index: name, label, property}} = DROP VECTOR INDEX FOR (n:{{label}}) ON (n.{{property}})

// A full-text index (RediSearch) on label.property.
{{fulltext_index: name, label, property}} = CALL db.idx.fulltext.createNodeIndex('{{label}}', '{{property}}')

// Every index, one row each with the store's own columns (GraphStore._list_vector_dimensions reads them): label,
// properties, types, options.
{{indexes}} =
CALL db.indexes() YIELD label, properties, types, options
RETURN label, properties, types, options

// --- document filters ----------------------------------------------------------------------------------------------
// The slot of a filter's predicate in a statement (cypher/filters/documents): `true` as loaded (and linted);
// kbgraph.cypher.compose puts the predicate kbgraph.filters.compile made there instead.
{{predicate}} = true
