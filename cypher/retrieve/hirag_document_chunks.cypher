// HiRAG's chunk-level dense retrieval (paper 004 §4.3, eq. 5; kbgraph.query.methods.hirag_retrieve): every chunk of the
// document $document_id with its exact cosine similarity to $embedding (no index: the search is restricted to
// one document), best first, then in document order. score: cosine in [-1, 1] ({{cosine}}).
// Served documents only: nothing comes back for a Document that is not 'complete'.
MATCH (d:Document {id: $document_id})
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
MATCH (c:Chunk {document_id: $document_id})
WHERE c.embedding IS NOT NULL
RETURN c.id AS id, c.order AS position, {{cosine: c.embedding, $embedding}} AS score
ORDER BY score DESC, position ASC, id ASC
