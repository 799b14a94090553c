// Create or update Document nodes (information-resource layer). status 'writing' until the whole
// document is written; ingestion sets 'complete' last (see mark_documents_complete). The vector waits in
// pending_embedding and becomes `embedding` (enters the vector index) when the document is complete: FalkorDB
// 4.16 loses vector-index entries of nodes updated after they were indexed (measured: setting `status` on 200
// indexed Documents left 100 findable), so a Document is indexed once, complete, and never updated after.
UNWIND $rows AS row
MERGE (d:Document {id: row.id})
SET d.uri = row.uri, d.title = row.title, d.mime = row.mime, d.sha256 = row.sha256,
    d.ingested_at = row.ingested_at, d.summary = row.summary, d.ocr = row.ocr, d.ocr_pages = row.ocr_pages,
    d.status = 'writing',
    d.pending_embedding = vecf32(row.embedding)
