// Record the start of an ingestion run.
CREATE (r:IngestionRun {id: $id, started_at: $started_at, status: 'running', paths: $paths})
RETURN r.id AS id
