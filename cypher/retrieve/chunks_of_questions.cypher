// Path (b) of hierarchical retrieval (PIKE-RAG Fig. 11): atomic questions -> the chunks that HAS_QUESTION them.
// Served chunks only: a chunk is left out when its Document is not 'complete' (still being written, or left
// 'writing' by a killed run; see ingest/mark_documents_complete).
UNWIND $ids AS question_id
MATCH (c:Chunk)-[:HAS_QUESTION]->(q:AtomicQuestion {id: question_id})
WITH q, c
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH q, c, d
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
RETURN q.id AS via, c.id AS chunk_id, q.text AS text
