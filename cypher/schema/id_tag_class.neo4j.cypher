// kbgraph schema (uniqueness of TagClass.id: stable_id('tagclass', norm of its name), so names are unique); created idempotently by GraphStore.ensure_schema.
CREATE CONSTRAINT tag_class_id IF NOT EXISTS FOR (n:TagClass) REQUIRE n.id IS UNIQUE
