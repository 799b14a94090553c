// Keep a run that shares the database with other writers (ingest_writers = claims) known alive: its IngestionRun
// expires $ttl_ms from now (database clock) unless renewed again; ingest/interrupt_stale_runs leaves it alone till then.
MATCH (r:IngestionRun {id: $id})
SET r.expires_at = timestamp() + $ttl_ms
RETURN r.id AS id
