// The saved questions (kbgraph ask --save), newest first, with how many chunks each USED. $limit: how many.
MATCH (q:Question)
OPTIONAL MATCH (q)-[u:USED]->(:Chunk)
WITH q, count(u) AS used
RETURN q AS question, q.text AS text, q.method AS method, q.asked_at AS asked_at, used
ORDER BY asked_at DESC
LIMIT $limit
