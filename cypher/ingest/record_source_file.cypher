// Record a passage corpus file ($id: its file URI) as fully ingested: sha256 of its raw bytes, passages.
MERGE (f:SourceFile {id: $id})
SET f.sha256 = $sha256, f.passages = $passages, f.recorded_at = $recorded_at
RETURN f.id AS id
