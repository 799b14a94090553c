// Delete a document's distilled knowledge: the atomic questions and triples of its chunks.
OPTIONAL MATCH (q:AtomicQuestion {document_id: $id})
DETACH DELETE q
WITH count(q) AS questions
OPTIONAL MATCH (t:Triple {document_id: $id})
DETACH DELETE t
RETURN questions, count(t) AS triples
