// Nodes that lost their place in the graph (should be none): sections and chunks without a parent, atomic
// questions and triples without a chunk, entities nothing mentions, documents whose write never finished,
// sub-questions without their question. $limit: at most this many. Under a document scope ($documents,
// kbgraph.store.scope) only the sections, chunks, atomic questions and triples of its documents.
MATCH (n)
WHERE ($documents IS NULL OR n.document_id IN $documents)
  AND ((n:Chunk AND NOT (n)<-[:HAS_CHUNK]-())
   OR (n:Section AND NOT (n)<-[:HAS_SECTION]-())
   OR (n:AtomicQuestion AND NOT (n)<-[:HAS_QUESTION]-())
   OR (n:Triple AND NOT (n)-[:EXTRACTED_FROM]->())
   OR (n:Entity AND NOT (n)<-[:MENTIONS]-() AND NOT (n)<-[:SUBJECT|OBJECT]-())
   OR (n:Document AND n.status = 'writing')
   OR (n:SubQuestion AND NOT (n)<-[:PROPOSED]-(:Question)))
RETURN labels(n)[0] AS label, n.id AS id, n AS node
LIMIT $limit
