// kbgraph schema (full-text index on Tag.name (RediSearch)); created idempotently by GraphStore.ensure_schema.
CALL db.idx.fulltext.createNodeIndex('Tag', 'name')
