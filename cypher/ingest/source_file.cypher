// The recorded state of a passage corpus file ($id: its file URI): the sha256 of its raw bytes and how many
// passages it held when a run last ingested all of them without error (kbgraph.ingest.pipeline), and the sha256
// of the metadata the run gave it from outside the file (path, file system, sidecar, --meta; kbgraph.ingest.refresh).
MATCH (f:SourceFile {id: $id})
RETURN f.sha256 AS sha256, f.passages AS passages, f.metadata_sha256 AS metadata_sha256
