// kbgraph schema (full-text index on Entity.name (RediSearch)); created idempotently by GraphStore.ensure_schema.
CALL db.idx.fulltext.createNodeIndex('Entity', 'name')
