// The last write of a unit of work: the subgraphs of these documents are whole. {{complete_document}}
// (cypher/fragments/) sets status 'complete', and on FalkorDB moves the vector from pending_embedding to `embedding`
// in the same statement, so a Document enters the vector index once, complete (see upsert_document).
UNWIND $ids AS id
MATCH (d:Document {id: id})
SET {{complete_document: d}}
RETURN d.id AS id
