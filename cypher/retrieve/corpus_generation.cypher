// A cheap key of the chunk corpus's state, read before every learned-ranker query (kbgraph.query.bm25's shared
// BM25 index): the number of Document nodes and the latest ingestion run (id, finish time, status). Any
// ingestion run or deletion changes it; the BM25 index is then re-checked against the full corpus fingerprint
// (retrieve/chunk_keys). Documents completed inside a run that is still going are seen when it finishes.
MATCH (d:Document)
WITH count(d) AS documents
OPTIONAL MATCH (r:IngestionRun)
WITH documents, r
ORDER BY r.started_at DESC
LIMIT 1
RETURN documents, r.id AS run, r.finished_at AS finished_at, r.status AS status
