// HiRAG's document-level sparse retrieval (paper 004 §4.3, eq. 3), entity side (kbgraph.query.methods.hirag_retrieve):
// for each entity of $ids (hits of the Entity.name full-text index), the documents whose chunks mention it and
// how many of their chunks do, most mentions first, at most $limit rows. Served documents only: a Document
// that is not 'complete' (still being written, or left 'writing' by a killed run) is left out.
UNWIND $ids AS entity_id
MATCH (e:Entity {id: entity_id})<-[:MENTIONS]-(c:Chunk)
MATCH (d:Document {id: c.document_id})
WHERE coalesce(d.status, 'complete') = 'complete' AND ($documents IS NULL OR d.id IN $documents)
RETURN entity_id, e.name AS name, d.id AS document_id, d.title AS title, count(c) AS mentions
ORDER BY mentions DESC, document_id ASC
LIMIT $limit
