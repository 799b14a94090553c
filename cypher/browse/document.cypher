// A document's three layers: the Document, the Sections down to each Chunk, and each Chunk's distilled
// knowledge (atomic questions, triples, entities). $document: the document's id, its source URI or part of its
// title ('' = the most recently ingested document). $limit: chunks in reading order. $per_chunk: atomic
// questions, triples and entities shown per chunk. One row per chunk. Complete documents only (not one still
// being written or left 'writing' by a killed run). Under a document scope ($documents, kbgraph.store.scope) one
// of its documents.
MATCH (d:Document)
WHERE d.status = 'complete' AND ($documents IS NULL OR d.id IN $documents)
  AND ($document = '' OR d.id = $document OR d.uri = $document OR toLower(d.title) CONTAINS toLower($document))
WITH d
ORDER BY d.ingested_at DESC, d.title
LIMIT 1
MATCH path = (d)-[:HAS_SECTION*0..12]->(parent)-[:HAS_CHUNK]->(c:Chunk)
WITH d, c, [n IN nodes(path) WHERE n:Section] AS sections
ORDER BY c.order
LIMIT $limit
OPTIONAL MATCH (c)-[:HAS_QUESTION]->(q:AtomicQuestion)
WITH d, c, sections, collect(q)[..$per_chunk] AS questions
OPTIONAL MATCH (t:Triple)-[:EXTRACTED_FROM]->(c)
WITH d, c, sections, questions, collect(t)[..$per_chunk] AS triples
OPTIONAL MATCH (c)-[:MENTIONS]->(e:Entity)
WITH d, c, sections, questions, triples, collect(e)[..$per_chunk] AS entities
RETURN d AS document, sections, c AS chunk, questions, triples, entities
ORDER BY c.order
