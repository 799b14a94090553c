// kbgraph schema (range index on IngestLease.kb); created idempotently by GraphStore.ensure_schema. The embedded
// FalkorDB store keeps the file lock in the KB folder and writes no lease; the index keeps both stores' schemas alike.
CREATE INDEX FOR (n:IngestLease) ON (n.kb)
