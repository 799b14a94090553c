// Take the ingest lease of $kb (kbgraph.ingest.lease) when it is free: absent, expired by the database's clock
// (timestamp(), ms; no host's clock counts), already ours, or held by $dead_owner (a holder on this machine whose
// process is gone; '' for none). Otherwise leave it as it is. Returns whether it was taken and who holds it now.
// Safe against two takers at once under Neo4j's locking: MERGE on the unique key (schema/ingest_lease_kb) lets one
// transaction create the node while the other waits and then matches it; SET _LOCK_ takes the node's write lock
// BEFORE owner and expiry are read (read-committed isolation would let both read "expired" and both take it), so
// the second taker reads what the first committed (Neo4j Operations Manual, "Concurrent data access", lost updates).
MERGE (l:IngestLease {kb: $kb})
SET l._LOCK_ = true
REMOVE l._LOCK_
WITH l, timestamp() AS now
WITH l, now, (l.owner IS NULL OR l.expires_at <= now OR l.owner = $owner OR l.owner = $dead_owner) AS free
SET l += CASE WHEN free THEN {
  owner: $owner, host: $host, pid: $pid, machine: $machine, process_start: $process_start,
  acquired_at: $acquired_at, ttl_ms: $ttl_ms, expires_at: now + $ttl_ms
} ELSE {} END
RETURN free AS taken, l.owner AS owner, l.host AS host, l.pid AS pid, l.machine AS machine,
       l.process_start AS process_start, l.acquired_at AS acquired_at, l.expires_at - now AS remaining_ms
