// kbgraph schema (uniqueness of Document.id); created idempotently by GraphStore.ensure_schema.
CREATE CONSTRAINT document_id IF NOT EXISTS FOR (n:Document) REQUIRE n.id IS UNIQUE
