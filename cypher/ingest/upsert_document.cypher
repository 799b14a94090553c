// Create or update Document nodes (information-resource layer); title_alternatives: the file's other usable titles
// (kbgraph.ingest.titles). status 'writing' until the whole
// document is written; ingestion sets 'complete' last (see mark_documents_complete). The vector goes to the
// store's {{document_vector_property}} (cypher/fragments/: on FalkorDB it enters the index only once complete).
UNWIND $rows AS row
MERGE (d:Document {id: row.id})
SET d.uri = row.uri, d.title = row.title, d.mime = row.mime, d.sha256 = row.sha256,
    d.ingested_at = row.ingested_at, d.summary = row.summary, d.ocr = row.ocr, d.ocr_pages = row.ocr_pages,
    d.title_alternatives = row.title_alternatives,
    d.status = 'writing',
    d.{{document_vector_property}} = {{vector: row.embedding}}
