// benchmarks.scale_out: every Chunk's id and text, by id.
MATCH (c:Chunk)
RETURN c.id AS id, c.text AS text
ORDER BY id
