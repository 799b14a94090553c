// kbgraph schema (full-text index on Tag.norm, the tag's normalised name: a word glued to typographic quotes in the
// first spelling seen, '“Shared topic”', is found as on FalkorDB); created idempotently by GraphStore.ensure_schema.
CREATE FULLTEXT INDEX tag_norm IF NOT EXISTS FOR (n:Tag) ON EACH [n.norm]
