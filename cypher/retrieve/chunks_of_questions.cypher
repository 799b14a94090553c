// Path (b) of hierarchical retrieval (PIKE-RAG Fig. 11): atomic questions -> the chunks that HAS_QUESTION them.
UNWIND $ids AS question_id
MATCH (c:Chunk)-[:HAS_QUESTION]->(q:AtomicQuestion {id: question_id})
RETURN q.id AS via, c.id AS chunk_id, q.text AS text
