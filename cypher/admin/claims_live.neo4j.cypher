// The live claims of other runs on knowledge base $kb (not expired by the database's clock): an exclusive run that
// has just taken the ingest lease waits until none is left (kbgraph.ingest.lease). At most $limit rows.
MATCH (c:IngestClaim {kb: $kb})
WHERE c.owner IS NOT NULL AND c.owner <> $owner AND c.expires_at > timestamp()
RETURN c.document_key AS key, c.owner AS owner, c.host AS host, c.pid AS pid, c.machine AS machine,
       c.process_start AS process_start, c.claimed_at AS acquired_at, c.expires_at - timestamp() AS remaining_ms
LIMIT $limit
