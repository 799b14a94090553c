// Tag-pair collection (PIKE-RAG §5.2.2): the chunks of every document of a passage corpus (its URI has a
// '#fragment': the passage id, kbgraph.eval.metrics.passage_id), so that a QA sample's gold passage ids can be
// mapped to their chunks. Only complete documents.
MATCH (d:Document)
WHERE d.uri CONTAINS '#' AND coalesce(d.status, 'complete') = 'complete'
MATCH (c:Chunk {document_id: d.id})
RETURN d.uri AS uri, c.id AS chunk_id
