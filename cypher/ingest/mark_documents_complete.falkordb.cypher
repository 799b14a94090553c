// The last write of a unit of work: the subgraphs of these documents are whole. Their vectors move from
// pending_embedding to `embedding` in the same statement, so a Document enters the vector index once, complete
// (FalkorDB 4.16 loses vector-index entries of nodes updated after they were indexed; see upsert_document).
UNWIND $ids AS id
MATCH (d:Document {id: id})
SET d.status = 'complete', d.embedding = coalesce(d.pending_embedding, d.embedding), d.pending_embedding = null
RETURN d.id AS id
