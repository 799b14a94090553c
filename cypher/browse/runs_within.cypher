// The ingestion runs a document scope ($documents, kbgraph.store.scope) may see, newest first (the web app's
// Documents page for a document-scoped key, kbgraph.serve.explore): each run that wrote one of its documents as it
// is now (its ingested_at falls inside the run, as in browse/changed), with when it started and finished and those
// documents (id, title, uri), by title; nothing of what the run did to other files (no status, counts, paths or
// errors: they are of every file it was given). $skip, $limit: the page. Nothing outside a scope ($documents null:
// browse/runs).
UNWIND coalesce($documents, []) AS document_id
MATCH (d:Document {id: document_id})
WHERE d.status = 'complete'
MATCH (r:IngestionRun)
WHERE d.ingested_at >= r.started_at AND (r.finished_at IS NULL OR d.ingested_at <= r.finished_at)
WITH r, d
ORDER BY d.title, d.id
WITH r, collect({id: d.id, title: d.title, uri: d.uri}) AS documents
RETURN r.id AS id, r.started_at AS started_at, r.finished_at AS finished_at, documents
ORDER BY started_at DESC, id
SKIP $skip
LIMIT $limit
