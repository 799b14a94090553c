// Claim the source file $key of knowledge base $kb for run $owner (kbgraph.ingest.claims) when the claim is free:
// absent, expired by the database's clock (timestamp(), ms), already ours, or held by $dead_owner (a holder on
// this machine whose process is gone; '' for none). Otherwise leave it. The same locking as admin/lease_acquire:
// MERGE on the unique key (schema/ingest_claim_key), then the node's write lock before its owner and expiry are
// read, so two takers never both get it. Returns whether it was taken and who holds it now.
MERGE (c:IngestClaim {kb: $kb, document_key: $key})
SET c._LOCK_ = true
REMOVE c._LOCK_
WITH c, timestamp() AS now
WITH c, now, (c.owner IS NULL OR c.expires_at <= now OR c.owner = $owner OR c.owner = $dead_owner) AS free
SET c += CASE WHEN free THEN {
  owner: $owner, run_id: $run_id, host: $host, pid: $pid, machine: $machine, process_start: $process_start,
  claimed_at: $claimed_at, expires_at: now + $ttl_ms
} ELSE {} END
RETURN free AS taken, c.owner AS owner, c.host AS host, c.pid AS pid, c.machine AS machine,
       c.process_start AS process_start, c.claimed_at AS acquired_at, c.expires_at - now AS remaining_ms
