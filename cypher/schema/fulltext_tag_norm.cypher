// kbgraph schema (full-text index on Tag.norm, the tag's normalised name: FalkorDB's RediSearch splits words on
// ASCII punctuation only, so in the first spelling seen, '“Shared topic”', 'shared' is no word of its own (measured
// on FalkorDB 4.16); the normalised name is found alike on every store); created idempotently by
// GraphStore.ensure_schema.
{{fulltext_index: tag_norm, Tag, norm}}
