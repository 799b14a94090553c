// kbgraph schema (uniqueness of Section.id); created idempotently by GraphStore.ensure_schema.
CREATE CONSTRAINT section_id IF NOT EXISTS FOR (n:Section) REQUIRE n.id IS UNIQUE
