// A cheap key of the chunk corpus's state, read before every learned-ranker query (kbgraph.query.bm25's shared
// BM25 index, kbgraph.query.propagation.adjacency): the number of Document nodes, the number of ingestion runs (a run that
// starts in the same second as the one before it still changes the key: start times have whole seconds) and the
// latest ingestion run (id, finish time, status). Any
// ingestion run or deletion changes it; the BM25 index is then re-checked against the full corpus fingerprint
// (retrieve/chunk_keys). Documents completed inside a run that is still going are seen when it finishes.
MATCH (d:Document)
WITH count(d) AS documents
OPTIONAL MATCH (n:IngestionRun)
WITH documents, count(n) AS runs
OPTIONAL MATCH (r:IngestionRun)
WITH documents, runs, r
ORDER BY r.started_at DESC, r.id DESC
LIMIT 1
RETURN documents, runs, r.id AS run, r.finished_at AS finished_at, r.status AS status
