// Create or update Chunk nodes (corpus layer) and the HAS_CHUNK edge from their Section or Document.
UNWIND $rows AS row
MERGE (c:Chunk {id: row.id})
SET c.text = row.text, c.kind = row.kind, c.summary = row.summary, c.page = row.page,
    c.order = row.order, c.section_path = row.section_path, c.document_id = row.document_id,
    c.ocr_confidence = row.ocr_confidence,
    c.embedding = {{vector: row.embedding}}
WITH c, row
OPTIONAL MATCH (d:Document {id: row.parent_id})
OPTIONAL MATCH (p:Section {id: row.parent_id})
FOREACH (_ IN CASE WHEN d IS NULL THEN [] ELSE [1] END | MERGE (d)-[:HAS_CHUNK]->(c))
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END | MERGE (p)-[:HAS_CHUNK]->(c))
