// kbgraph schema (range index on IngestClaim.kb); created idempotently by GraphStore.ensure_schema. The embedded
// FalkorDB store runs one writer (the file lock) and writes no claim; the index keeps both stores' schemas alike.
CREATE INDEX FOR (n:IngestClaim) ON (n.kb)
