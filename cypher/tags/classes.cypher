// Auto-tagging (PIKE-RAG §5.2.2): the knowledge base's tag classes, by name, with how many corpus tags each has.
MATCH (k:TagClass)
OPTIONAL MATCH (t:Tag {side: 'corpus', class: k.name})
RETURN k.id AS id, k.name AS name, k.description AS description, k.created_at AS created_at, count(t) AS tags
ORDER BY name
