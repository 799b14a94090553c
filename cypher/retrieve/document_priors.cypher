// Score propagation, the Document layer (PIKE-RAG Fig. 8; kbgraph.query.propagation): of the chunks $chunk_ids,
// which already have a score from another layer, those of a seeded document of $document_ids (Chunk.document_id).
// A Document term is a prior: it only adds to a chunk with a score, so the statement is given those chunks instead
// of returning every chunk of each seeded document (on the examples knowledge base that was ~550 rows an ask, of
// which a few dozen were kept). Served chunks only: the Document must be 'complete'.
UNWIND $document_ids AS node_id
MATCH (d:Document {id: node_id})
WHERE d.status = 'complete'
MATCH (c:Chunk {document_id: node_id})
WHERE c.id IN $chunk_ids
RETURN 'Document' AS layer, node_id AS via, c.id AS chunk_id
