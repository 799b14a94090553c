// benchmarks.ranker_compare: every Entity's id, name, type and degree (the chunks that MENTION it).
MATCH (e:Entity)
OPTIONAL MATCH (e)<-[:MENTIONS]-(c:Chunk)
RETURN e.id AS id, e.name AS name, e.type AS type, count(c) AS degree
