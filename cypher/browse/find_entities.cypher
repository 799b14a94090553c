// Entities whose name holds $text (case-insensitive), an exact name first, then the most mentioned: the web app's
// Explore search when the full-text index (retrieve/fulltext_search, whole words) finds none, e.g. for a part of a
// word. A scan of the entities' names. $limit: at most this many. Under a document scope ($documents,
// kbgraph.store.scope) only the entities a chunk of its documents mentions, with those mentions only.
MATCH (e:Entity)
WHERE toLower(e.name) CONTAINS toLower($text)
OPTIONAL MATCH (e)<-[m:MENTIONS]-(c:Chunk)
WITH e, CASE WHEN $documents IS NULL OR c.document_id IN $documents THEN m END AS seen
WITH e, count(seen) AS mentions
WHERE $documents IS NULL OR mentions > 0
RETURN e.id AS id, e {.*, embedding: null} AS properties, mentions
ORDER BY CASE WHEN toLower(e.name) = toLower($text) THEN 0 ELSE 1 END, mentions DESC, e.name, e.id
LIMIT $limit
