// What the graph knows of some documents: content hash and completeness, for incremental ingestion; its title,
// its metadata as [key, value] pairs (the keys of metadata_keys) and file_metadata, for a re-ingest that changes
// only the metadata (kbgraph.ingest.refresh).
UNWIND $ids AS doc_id
MATCH (d:Document {id: doc_id})
RETURN d.id AS id, d.sha256 AS sha256, d.status AS status, d.uri AS uri, d.title AS title,
       [k IN coalesce(d.metadata_keys, []) | [k, d[k]]] AS metadata, d.file_metadata AS file_metadata
