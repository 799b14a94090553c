// Create or update Document nodes (information-resource layer); title_alternatives: the file's other usable titles
// (kbgraph.ingest.titles). status 'writing' until the whole
// document is written; ingestion sets 'complete' last (see mark_documents_complete). The vector goes to the
// store's {{document_vector_property}} (cypher/fragments/: on FalkorDB it enters the index only once complete).
// row.metadata: its metadata keys and values (issue 58, kbgraph.ingest.metadata), top-level properties listed in
// metadata_keys; file_metadata: the JSON a re-ingest of the unchanged file merges them from (ingest/update_metadata).
UNWIND $rows AS row
MERGE (d:Document {id: row.id})
SET d += row.metadata
SET d.uri = row.uri, d.title = row.title, d.mime = row.mime, d.sha256 = row.sha256,
    d.ingested_at = row.ingested_at, d.summary = row.summary, d.ocr = row.ocr, d.ocr_pages = row.ocr_pages,
    d.title_alternatives = row.title_alternatives,
    d.metadata_keys = keys(row.metadata), d.file_metadata = row.file_metadata,
    d.status = 'writing',
    d.{{document_vector_property}} = {{vector: row.embedding}}
