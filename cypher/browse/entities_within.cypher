// Which of the entities $ids (full-text hits of the web app's Explore search, kbgraph.serve.explore) a chunk of
// the documents of the caller's document scope ($documents, kbgraph.store.scope) mentions: their ids, in no
// order. Outside a scope ($documents null) every one of $ids that exists.
UNWIND $ids AS id
MATCH (e:Entity {id: id})
OPTIONAL MATCH (e)<-[m:MENTIONS]-(c:Chunk)
WITH e, CASE WHEN $documents IS NULL OR c.document_id IN $documents THEN m END AS seen
WITH e, count(seen) AS mentions
WHERE $documents IS NULL OR mentions > 0
RETURN e.id AS id
