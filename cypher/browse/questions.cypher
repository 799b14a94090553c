// The saved questions (kbgraph ask --save), newest first, with how many chunks each USED (of complete
// documents) and, for method 'auto', the question class and route. $limit: how many. Under a document scope
// ($documents, kbgraph.store.scope) only the questions that used chunks and only chunks of its documents (another's
// answer may quote other documents).
MATCH (q:Question)
OPTIONAL MATCH (q)-[u:USED]->(c:Chunk)
WITH q, u, c
OPTIONAL MATCH (cd:Document {id: c.document_id})
WITH q, count(CASE WHEN coalesce(cd.status, 'complete') = 'complete' THEN u END) AS used,
     count(CASE WHEN NOT coalesce(c.document_id IN $documents, false) THEN u END) AS outside
WHERE $documents IS NULL OR (used > 0 AND outside = 0)
RETURN q AS question, q.text AS text, q.method AS method, q.question_class AS question_class, q.route AS route,
       q.asked_at AS asked_at, used
ORDER BY asked_at DESC
LIMIT $limit
