// kbgraph schema (uniqueness of (IngestClaim.kb, IngestClaim.document_key): one claim per source file and database,
// kbgraph.ingest.claims); created idempotently by GraphStore.ensure_schema. It makes two concurrent MERGEs of
// admin/claim_take serialise on the key instead of creating two claims.
CREATE CONSTRAINT ingest_claim_key IF NOT EXISTS FOR (n:IngestClaim) REQUIRE (n.kb, n.document_key) IS UNIQUE
