// Auto-tagging (PIKE-RAG §5.2.2): what the tag prompts read of each chunk of $ids (unknown ids are left out).
UNWIND $ids AS chunk_id
MATCH (c:Chunk {id: chunk_id})
OPTIONAL MATCH (d:Document {id: c.document_id})
RETURN c.id AS id, c.text AS text, c.summary AS summary, c.kind AS kind, d.title AS title
