// At the end of a run writing with per-file claims (kbgraph.ingest.claims): remove the ingest lease node of $kb if
// nobody holds it (admin/claim_lease MERGEs it, with no owner, to lock it), so a free lease leaves no node behind.
MATCH (l:IngestLease {kb: $kb})
WHERE l.owner IS NULL
SET l._LOCK_ = true
REMOVE l._LOCK_
WITH l
WHERE l.owner IS NULL
DELETE l
RETURN count(*) AS dropped
