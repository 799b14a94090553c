// benchmarks.scale_out: the claims of the writer of process $pid, each with its number of complete Documents.
MATCH (c:IngestClaim {pid: $pid})
OPTIONAL MATCH (d:Document {status: 'complete'})
WHERE d.uri STARTS WITH c.document_key + '#'
RETURN c.document_key AS key, count(d) AS complete
