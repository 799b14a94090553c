// Documents added or updated by an ingestion run: those whose ingested_at falls inside the run
// ($run: an IngestionRun id, '' = the last run). Deleted documents are gone (the run counts them), documents
// not complete (still being written or left 'writing' by a killed run) are not shown. One row. Under a document
// scope ($documents, kbgraph.store.scope) its documents only, and the run without the paths it was given and its
// errors (they name other documents' files).
MATCH (r:IngestionRun)
WHERE $run = '' OR r.id = $run
WITH r
ORDER BY r.started_at DESC
LIMIT 1
OPTIONAL MATCH (d:Document)
WHERE d.status = 'complete' AND d.ingested_at >= r.started_at
  AND (r.finished_at IS NULL OR d.ingested_at <= r.finished_at) AND ($documents IS NULL OR d.id IN $documents)
WITH r, d
ORDER BY d.title
RETURN CASE WHEN $documents IS NULL THEN r ELSE r {.*, paths: null, errors: null} END AS run, r.status AS status, r.added AS added, r.updated AS updated, r.deleted AS deleted,
       r.failed AS failed, collect(d) AS documents
