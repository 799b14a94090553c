// Record the start of an ingestion run. With per-file claims (ingest_writers = claims, $ttl_ms not null) the run
// is known alive from this statement on: expires_at is set in the same statement that creates it, so another
// writer's ingest/interrupt_stale_runs between this and the first ingest/renew_run cannot take it for dead.
CREATE (r:IngestionRun {id: $id, started_at: $started_at, status: 'running', paths: $paths,
                        expires_at: CASE WHEN $ttl_ms IS NULL THEN null ELSE timestamp() + $ttl_ms END})
RETURN r.id AS id
