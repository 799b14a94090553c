// One page of chunks for the in-memory adjacency of score propagation (kbgraph.query.propagation.adjacency): in chunk id
// order after $after, at most $limit rows, each chunk with what retrieve/layer_candidates and
// retrieve/hop_neighbours and retrieve/chunk_details read of it: its document_id, its Document's status, title and
// uri, its text, summary, kind, page and section path, its embedding, and the ids at the other end
// of each relationship those statements follow (HAS_QUESTION, EXTRACTED_FROM, MENTIONS, TAGGED, NEXT outgoing,
// HAS_CHUNK from a Section; each comprehension with a variable of its own: FalkorDB 4.16 returned no triples
// when two of them named theirs alike). Every chunk, served or not: the adjacency applies the 'complete' filter as the
// statements do, and an entity's or tag's degree counts every chunk linked to it.
MATCH (c:Chunk)
WHERE c.id > $after
WITH c
ORDER BY c.id
LIMIT $limit
OPTIONAL MATCH (d:Document {id: c.document_id})
RETURN c.id AS id, c.document_id AS document_id, d.status AS status, d.title AS title, d.uri AS uri,
       c.text AS text, c.summary AS summary, c.kind AS kind, c.page AS page, c.section_path AS section_path,
       c.embedding AS embedding,
       [(c)-[:HAS_QUESTION]->(q:AtomicQuestion) | q.id] AS questions,
       [(t:Triple)-[:EXTRACTED_FROM]->(c) | t.id] AS triples,
       [(c)-[:MENTIONS]->(e:Entity) | e.id] AS mentions,
       [(c)-[:TAGGED]->(g:Tag) | g.id] AS tags,
       [(c)-[:NEXT]->(b:Chunk) | b.id] AS next,
       [(s:Section)-[:HAS_CHUNK]->(c) | s.id] AS sections
ORDER BY id
