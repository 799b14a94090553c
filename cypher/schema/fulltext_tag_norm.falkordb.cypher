// kbgraph schema (full-text index on Tag.norm (RediSearch), the tag's normalised name: RediSearch splits words on
// ASCII punctuation only, so in the first spelling seen, '“Shared topic”', 'shared' is no word of its own; measured on
// FalkorDB 4.16); created idempotently by GraphStore.ensure_schema.
CALL db.idx.fulltext.createNodeIndex('Tag', 'norm')
