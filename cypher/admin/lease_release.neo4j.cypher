// Give the ingest lease of $kb back at the end of a run: delete it, only if $owner holds it (a lease lost to
// another run stays with that run). Returns released = 1 or 0.
MATCH (l:IngestLease {kb: $kb})
SET l._LOCK_ = true
REMOVE l._LOCK_
WITH l
WHERE l.owner = $owner
DELETE l
RETURN count(*) AS released
