// First statement of the unit of work that takes a document claim (kbgraph.ingest.claims): the ingest lease of $kb
// with its write lock held until the unit ends, so that an exclusive run (admin/lease_acquire, which takes the same
// lock) either sees this claim when it waits for the claims to drain, or is seen here. MERGE, as lease_acquire:
// the node may not exist yet (a lease node with no owner is a free lease). Returns the lease's holder, if any.
MERGE (l:IngestLease {kb: $kb})
SET l._LOCK_ = true
REMOVE l._LOCK_
WITH l, timestamp() AS now
RETURN l.owner AS owner, l.host AS host, l.pid AS pid, l.machine AS machine, l.process_start AS process_start,
       l.acquired_at AS acquired_at, l.expires_at - now AS remaining_ms
