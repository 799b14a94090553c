// kbgraph schema (full-text index on Document.title (RediSearch)); created idempotently by GraphStore.ensure_schema.
CALL db.idx.fulltext.createNodeIndex('Document', 'title')
