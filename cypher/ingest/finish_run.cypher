// Record the outcome of an ingestion run: counts and one line per failed file.
MATCH (r:IngestionRun {id: $id})
SET r.finished_at = $finished_at, r.status = $status, r.added = $added, r.updated = $updated,
    r.unchanged = $unchanged, r.deleted = $deleted, r.failed = $failed, r.errors = $errors,
    r.chunks = $chunks, r.seconds = $seconds
RETURN r.id AS id
