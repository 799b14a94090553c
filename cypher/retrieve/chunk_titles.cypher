// The document title of each chunk of $ids: the learned ranker's pool (kbgraph.query.propagation; the title
// feature of kbgraph.query.ranking), without the chunks' text (fetched for the top k only, chunk_details).
// Served chunks only: a chunk is left out when its Document is not 'complete' (still being written, or left
// 'writing' by a killed run; see ingest/mark_documents_complete).
UNWIND $ids AS chunk_id
MATCH (c:Chunk {id: chunk_id})
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH c, d
WHERE coalesce(d.status, 'complete') = 'complete'
RETURN c.id AS id, d.title AS document_title
