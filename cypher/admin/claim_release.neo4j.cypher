// Give back the claims of source files $keys on knowledge base $kb once they are written (or at the end of the
// run): delete each, only if $owner holds it. Returns released = how many.
UNWIND $keys AS key
MATCH (c:IngestClaim {kb: $kb, document_key: key})
SET c._LOCK_ = true
REMOVE c._LOCK_
WITH c
WHERE c.owner = $owner
DELETE c
RETURN count(*) AS released
