// Auto-tagging (PIKE-RAG §5.2.2): the chunks of $rows ([{id}]) were tagged (their LLM request answered, with or
// without tags); tags/pending_chunks skips them until they are rewritten.
UNWIND $rows AS row
MATCH (c:Chunk {id: row.id})
SET c.tagged_at = $now
RETURN count(c) AS marked
