// kbgraph schema (uniqueness of IngestionRun.id); created idempotently by GraphStore.ensure_schema.
{{unique_index: ingestion_run_id, IngestionRun, id}}
