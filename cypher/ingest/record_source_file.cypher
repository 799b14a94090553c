// Record a passage corpus file ($id: its file URI) as fully ingested: sha256 of its raw bytes, passages, and the
// sha256 of the metadata given it from outside the file ($metadata_sha256; kbgraph.ingest.refresh).
MERGE (f:SourceFile {id: $id})
SET f.sha256 = $sha256, f.passages = $passages, f.recorded_at = $recorded_at, f.metadata_sha256 = $metadata_sha256
RETURN f.id AS id
