// Auto-tagging (PIKE-RAG §5.2.2): the ids of every served chunk (its Document 'complete'), in id order; the tag
// class proposal samples from them.
MATCH (c:Chunk)
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH c, d
WHERE coalesce(d.status, 'complete') = 'complete'
RETURN c.id AS id
ORDER BY id
