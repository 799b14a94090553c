// Auto-tagging (PIKE-RAG §5.2.2): which Tags of $ids exist already (they keep their name, class and embedding).
UNWIND $ids AS tag_id
MATCH (t:Tag {id: tag_id})
RETURN t.id AS id
