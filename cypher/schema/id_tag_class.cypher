// kbgraph schema (uniqueness of TagClass.id: stable_id('tagclass', norm of its name), so names are unique); created idempotently by GraphStore.ensure_schema.
{{unique_index: tag_class_id, TagClass, id}}
