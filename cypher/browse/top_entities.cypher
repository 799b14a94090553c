// The most connected entities: degree = chunks that MENTION the entity + entities it is RELATED to (either
// direction). $limit: how many. One row per entity, highest degree first.
MATCH (e:Entity)
OPTIONAL MATCH (e)<-[m:MENTIONS]-(:Chunk)
WITH e, count(m) AS mentions
OPTIONAL MATCH (e)-[r:RELATED]-(:Entity)
WITH e, mentions, count(r) AS related
RETURN e AS entity, e.name AS name, e.type AS type, mentions, related, mentions + related AS degree
ORDER BY degree DESC, name
LIMIT $limit
