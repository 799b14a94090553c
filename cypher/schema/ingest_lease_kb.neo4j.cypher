// kbgraph schema (uniqueness of IngestLease.kb: one ingest lease per database, kbgraph.ingest.lease); created
// idempotently by GraphStore.ensure_schema. It makes two concurrent MERGEs of admin/lease_acquire serialise on the
// key instead of creating two leases.
CREATE CONSTRAINT ingest_lease_kb IF NOT EXISTS FOR (n:IngestLease) REQUIRE n.kb IS UNIQUE
