// An entity's neighbourhood: the entities it is RELATED to, the triples that name it, the chunks that
// MENTION it and their documents. $entity: the entity's id or (part of) its name, case-insensitive, an exact
// name wins over a partial one, then the most mentioned ('' = the most mentioned entity of all). $limit: at
// most this many neighbours, triples and chunks. One row.
MATCH (e:Entity)
WHERE $entity = '' OR e.id = $entity OR toLower(e.name) CONTAINS toLower($entity)
OPTIONAL MATCH (e)<-[m:MENTIONS]-(:Chunk)
WITH e, count(m) AS mentions
ORDER BY CASE WHEN e.id = $entity OR toLower(e.name) = toLower($entity) THEN 0 ELSE 1 END, mentions DESC, e.name
LIMIT 1
OPTIONAL MATCH (e)-[:RELATED]-(other:Entity)
WITH e, mentions, collect(DISTINCT other)[..$limit] AS neighbours
OPTIONAL MATCH (t:Triple)-[:SUBJECT|OBJECT]->(e)
WITH e, mentions, neighbours, collect(DISTINCT t)[..$limit] AS triples
OPTIONAL MATCH (c:Chunk)-[:MENTIONS]->(e)
WITH e, mentions, neighbours, triples, c
ORDER BY c.document_id, c.order
WITH e, mentions, neighbours, triples, collect(c)[..$limit] AS chunks
OPTIONAL MATCH (d:Document)
WHERE d.id IN [x IN chunks | x.document_id]
RETURN e AS entity, mentions, neighbours, triples, chunks, collect(d) AS documents
