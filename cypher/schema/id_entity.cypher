// kbgraph schema (uniqueness of Entity.id); created idempotently by GraphStore.ensure_schema.
{{unique_index: entity_id, Entity, id}}
