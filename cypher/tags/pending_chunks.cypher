// Auto-tagging at ingest (PIKE-RAG §5.2.2): served chunks not tagged yet (no tagged_at: new or rewritten chunks,
// chunks whose tagging LLM call failed, or a knowledge base built before auto_tagging was on), in id order.
MATCH (c:Chunk)
WHERE c.tagged_at IS NULL
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH c, d
WHERE coalesce(d.status, 'complete') = 'complete'
RETURN c.id AS id
ORDER BY id
