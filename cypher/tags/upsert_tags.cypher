// Corpus tag collection (PIKE-RAG §5.2.2): corpus Tags ($rows: [{id, name, norm, class, embedding}], id =
// stable_id('tag', 'corpus', norm)), merged by id: a tag named alike in many chunks is one node. Rows of tags
// that exist already carry no embedding; they are left as they are.
UNWIND $rows AS row
MERGE (t:Tag {id: row.id})
ON CREATE SET t.name = row.name, t.norm = row.norm, t.class = row.class, t.side = 'corpus',
              t.embedding = {{vector: row.embedding}}, t.created_at = $now
RETURN count(t) AS written
