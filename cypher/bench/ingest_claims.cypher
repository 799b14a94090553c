// benchmarks.scale_out: the document keys of the IngestClaim nodes left.
MATCH (c:IngestClaim)
RETURN c.document_key AS document_key
