// kbgraph schema (uniqueness of IngestionRun.id); created idempotently by GraphStore.ensure_schema.
CREATE CONSTRAINT ingestion_run_id IF NOT EXISTS FOR (n:IngestionRun) REQUIRE n.id IS UNIQUE
