// Score propagation: documents -> their chunks (Chunk.document_id, range-indexed), for the Document prior.
UNWIND $ids AS document_id
MATCH (c:Chunk {document_id: document_id})
RETURN document_id AS via, c.id AS chunk_id
