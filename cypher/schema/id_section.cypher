// kbgraph schema (uniqueness of Section.id); created idempotently by GraphStore.ensure_schema.
{{unique_index: section_id, Section, id}}
