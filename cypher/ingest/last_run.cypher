// The most recent ingestion run.
MATCH (r:IngestionRun)
RETURN r.id AS id, r.started_at AS started_at, r.finished_at AS finished_at, r.status AS status,
       r.added AS added, r.updated AS updated, r.unchanged AS unchanged, r.deleted AS deleted,
       r.failed AS failed, r.errors AS errors
ORDER BY r.started_at DESC
LIMIT 1
