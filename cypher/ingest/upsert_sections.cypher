// Create or update Section nodes and their HAS_SECTION edge from the parent Document or Section.
// Rows come parent-first.
UNWIND $rows AS row
MERGE (s:Section {id: row.id})
SET s.title = row.title, s.level = row.level, s.path = row.path, s.order = row.order,
    s.document_id = row.document_id, s.embedding = {{vector: row.embedding}}
WITH s, row
OPTIONAL MATCH (d:Document {id: row.parent_id})
OPTIONAL MATCH (p:Section {id: row.parent_id})
FOREACH (_ IN CASE WHEN d IS NULL THEN [] ELSE [1] END | MERGE (d)-[:HAS_SECTION]->(s))
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END | MERGE (p)-[:HAS_SECTION]->(s))
