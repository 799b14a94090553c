// Delete a document's chunks, its sections and the document node itself.
OPTIONAL MATCH (c:Chunk {document_id: $id})
DETACH DELETE c
WITH count(c) AS chunks
OPTIONAL MATCH (s:Section {document_id: $id})
DETACH DELETE s
WITH chunks, count(s) AS sections
OPTIONAL MATCH (d:Document {id: $id})
DETACH DELETE d
RETURN chunks, sections, count(d) AS documents
