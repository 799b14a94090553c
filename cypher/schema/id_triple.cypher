// kbgraph schema (uniqueness of Triple.id); created idempotently by GraphStore.ensure_schema.
{{unique_index: triple_id, Triple, id}}
