// Nodes that lost their place in the three layers (should be none): sections/chunks without a document,
// atomic questions without a chunk, triples without a chunk, entities nothing mentions, corpus tags on no chunk.
MATCH (n)
WHERE (n:Chunk AND NOT (n)<-[:HAS_CHUNK]-())
   OR (n:Section AND NOT (n)<-[:HAS_SECTION]-())
   OR (n:AtomicQuestion AND NOT (n)<-[:HAS_QUESTION]-())
   OR (n:Triple AND NOT (n)-[:EXTRACTED_FROM]->())
   OR (n:Entity AND NOT (n)<-[:MENTIONS]-() AND NOT (n)<-[:SUBJECT|OBJECT]-())
   OR (n:Tag AND n.side = 'corpus' AND NOT (n)<-[:TAGGED]-())
RETURN labels(n)[0] AS label, n.id AS id
LIMIT $limit
