// At the start of a run: any other run still 'running' was killed (kill -9, power loss) before it could record its
// end, unless it is one of several writers sharing a Neo4j database (ingest_writers = claims), which renews
// expires_at while it lives (ingest/renew_run): such a run counts as dead only once expires_at has passed. It
// becomes 'interrupted'; finished_at stays null (its end is unknown) and interrupted_noticed_at /
// interrupted_noticed_by say when and by which run it was found.
MATCH (r:IngestionRun {status: 'running'})
WHERE r.id <> $id AND coalesce(r.expires_at, 0) <= timestamp()
SET r.status = 'interrupted', r.interrupted_noticed_at = $noticed_at, r.interrupted_noticed_by = $id
RETURN r.id AS id, r.started_at AS started_at
