// The documents of a knowledge base for people and the HTTP API (KnowledgeBase.documents): one row per Document,
// by title, with its status ('complete', or 'writing' while or after an interrupted write) and its chunk count.
// Under a document scope ($documents: a filter's or a document-scoped key's, kbgraph.store.scope) its documents only.
MATCH (d:Document)
WHERE $documents IS NULL OR d.id IN $documents
OPTIONAL MATCH (c:Chunk)
WHERE c.document_id = d.id
WITH d, count(c) AS chunks
RETURN d.id AS id, d.title AS title, d.uri AS uri, d.mime AS mime, d.status AS status,
       d.ingested_at AS ingested_at, chunks
ORDER BY title, id
SKIP $skip
LIMIT $limit
