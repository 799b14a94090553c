// What the graph knows of some documents: content hash and completeness, for incremental ingestion.
UNWIND $ids AS doc_id
MATCH (d:Document {id: doc_id})
RETURN d.id AS id, d.sha256 AS sha256, d.status AS status, d.uri AS uri
