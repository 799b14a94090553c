// kbgraph schema (uniqueness of Tag.id: stable_id('tag', side, norm), PIKE-RAG §5.2.2 auto-tagging); created idempotently by GraphStore.ensure_schema.
{{unique_index: tag_id, Tag, id}}
