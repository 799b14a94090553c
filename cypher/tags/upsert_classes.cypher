// Auto-tagging (PIKE-RAG §5.2.2): tag classes proposed by the LLM ($rows: [{id, name, description}], id =
// stable_id('tagclass', norm of the name)), merged by id: proposing again never duplicates a class.
UNWIND $rows AS row
MERGE (k:TagClass {id: row.id})
ON CREATE SET k.name = row.name, k.description = row.description, k.created_at = $now
RETURN count(k) AS written
