// Entities are shared across documents: created once, merged by id (normalised name + type).
UNWIND $rows AS row
MERGE (e:Entity {id: row.id})
ON CREATE SET e.name = row.name, e.type = row.type, e.embedding = {{vector: row.embedding}}
