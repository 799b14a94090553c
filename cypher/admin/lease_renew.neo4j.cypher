// Extend the ingest lease of $kb by $ttl_ms from now (database clock) if $owner still holds it; no row when it does
// not (taken over after it expired, or removed by `kbgraph reset`): the run has lost its lease (kbgraph.ingest.lease).
// The write lock is taken before the owner is read, so a renewal never extends a lease a taker has just taken.
MATCH (l:IngestLease {kb: $kb})
SET l._LOCK_ = true
REMOVE l._LOCK_
WITH l
WHERE l.owner = $owner
SET l.expires_at = timestamp() + $ttl_ms
RETURN l.expires_at AS expires_at
