// Tag-pair collection (PIKE-RAG §5.2.2): query-side tags $tags ([{id, name, norm, class}]), merged by id
// (stable_id('tag', 'query', norm)): re-learning updates them, never duplicates. Query tags carry no embedding
// (questions are embedded at query time), so the Tag vector index holds corpus tags only.
UNWIND $tags AS t
MERGE (g:Tag {id: t.id})
SET g.name = t.name, g.norm = t.norm, g.class = t.class, g.side = 'query'
RETURN count(g) AS written
