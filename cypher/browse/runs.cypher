// The ingestion runs, newest first (the web app's Documents page, kbgraph.serve.explore): when each started and
// finished, its status (running; completed; failed: some file failed; interrupted), what it did to documents (added, updated,
// unchanged, deleted, failed), its chunks and seconds, the paths it was given and one line per failed file
// (`errors`, "path: reason"). $skip, $limit: the page. Nothing under a document scope ($documents,
// kbgraph.store.scope): a run's counts, paths and errors are of every file it was given; browse/runs_within
// shows a scope its runs.
MATCH (r:IngestionRun)
WHERE $documents IS NULL
RETURN r.id AS id, r.started_at AS started_at, r.finished_at AS finished_at, r.status AS status,
       r.added AS added, r.updated AS updated, r.unchanged AS unchanged, r.deleted AS deleted, r.failed AS failed,
       r.chunks AS chunks, r.seconds AS seconds, r.paths AS paths, r.errors AS errors
ORDER BY r.started_at DESC, r.id
SKIP $skip
LIMIT $limit
