// A re-ingest that changes only documents' metadata (kbgraph.ingest.refresh): row.metadata holds the new keys and
// values and a null for every key gone (a null removes the property), row.metadata_keys the new keys,
// row.file_metadata the JSON they were merged from. Nothing else of the document is touched.
UNWIND $rows AS row
MATCH (d:Document {id: row.id})
SET d += row.metadata
SET d.metadata_keys = row.metadata_keys, d.file_metadata = row.file_metadata
RETURN count(d) AS updated
