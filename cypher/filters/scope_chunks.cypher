// The chunks of the Documents $ids (kbgraph.query.scope: a document scope's chunks), through the index on
// Chunk.document_id.
UNWIND $ids AS document_id
MATCH (c:Chunk {document_id: document_id})
RETURN c.id AS id
