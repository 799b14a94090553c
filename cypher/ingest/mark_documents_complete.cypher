// The last write of a unit of work: the subgraphs of these documents are whole.
UNWIND $ids AS id
MATCH (d:Document {id: id})
SET d.status = 'complete'
RETURN d.id AS id
