// Relationship count per type.
MATCH ()-[r]->()
RETURN type(r) AS type, count(*) AS count
