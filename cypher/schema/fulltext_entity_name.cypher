// kbgraph schema (full-text index on Entity.name); created idempotently by GraphStore.ensure_schema.
{{fulltext_index: entity_name, Entity, name}}
