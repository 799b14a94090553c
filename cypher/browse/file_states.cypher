// The state of the Documents $ids (the files of an upload being ingested: kbgraph.serve.jobs follows each file by
// the id of its document, stable_id('doc', its URI)): status ('writing', 'complete') and ingested_at. Ids of no
// document yet give no row.
UNWIND $ids AS id
MATCH (d:Document {id: id})
RETURN d.id AS id, d.status AS status, d.ingested_at AS ingested_at
