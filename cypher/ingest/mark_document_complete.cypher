// The last write of a document's unit of work: its subgraph is whole.
MATCH (d:Document {id: $id})
SET d.status = 'complete'
RETURN d.id AS id
