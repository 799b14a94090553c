// benchmarks.ranker_compare: every Chunk's id and document id.
MATCH (c:Chunk)
RETURN c.id AS id, c.document_id AS document_id
