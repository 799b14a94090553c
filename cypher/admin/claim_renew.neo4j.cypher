// Extend every claim $owner holds on knowledge base $kb by $ttl_ms from now (database clock); returns the keys
// renewed: a claim held no more (taken over after it expired, or removed by `kbgraph reset`) is missing. The write
// lock is taken before the owner is read again, so a renewal never extends a claim a taker has just taken.
MATCH (c:IngestClaim {kb: $kb})
WHERE c.owner = $owner
SET c._LOCK_ = true
REMOVE c._LOCK_
WITH c
WHERE c.owner = $owner
SET c.expires_at = timestamp() + $ttl_ms
RETURN c.document_key AS key
