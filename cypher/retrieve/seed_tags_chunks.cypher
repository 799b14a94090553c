// Score propagation, the Tag layer (PIKE-RAG §5.2.2 + Fig. 8): the chunks TAGGED with each mapped corpus tag
// ($tag_seeds: [{id, sim}]), one row per chunk for its best-scoring tag (the formula's max); a tag on more than
// $max_degree chunks carries no signal. Served chunks only (their Document 'complete', as in layer_chunks).
UNWIND $tag_seeds AS seed
MATCH (n:Tag {id: seed.id})<-[:TAGGED]-(c:Chunk)
WITH seed.id AS node_id, seed.sim AS sim, collect(c) AS chunks
WHERE size(chunks) <= $max_degree
UNWIND chunks AS c
WITH c, node_id, sim, size(chunks) AS degree
ORDER BY sim DESC, node_id
WITH c, collect([node_id, degree])[0] AS best
OPTIONAL MATCH (d:Document {id: c.document_id})
WITH c, best, d
WHERE coalesce(d.status, 'complete') = 'complete'
RETURN 'Tag' AS layer, best[0] AS via, c.id AS chunk_id, best[1] AS degree
