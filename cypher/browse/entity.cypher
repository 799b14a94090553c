// An entity's neighbourhood: the entities it is RELATED to, the triples that name it, the chunks that
// MENTION it and their documents. $entity: the entity's id or (part of) its name, case-insensitive, an exact
// name wins over a partial one, then the most mentioned ('' = the most mentioned entity of all). $limit: at
// most this many neighbours, triples and chunks. One row. Only what complete documents hold: chunks, triples
// and RELATED edges (by their triple) of a document that is not complete are left out, also from mentions.
// Each document lookup follows a WITH: FalkorDB rejects a lookup keyed on a null right after an OPTIONAL MATCH.
// Under a document scope ($documents, kbgraph.store.scope) only an entity a chunk of its documents mentions, and
// only its documents' mentions, chunks, triples and RELATED edges: nothing of another document, even through an
// entity both mention.
MATCH (e:Entity)
WHERE $entity = '' OR e.id = $entity OR toLower(e.name) CONTAINS toLower($entity)
OPTIONAL MATCH (e)<-[m:MENTIONS]-(mc:Chunk)
WITH e, m, mc
OPTIONAL MATCH (md:Document {id: mc.document_id})
WITH e, count(CASE WHEN coalesce(md.status, 'complete') = 'complete' AND ($documents IS NULL OR md.id IN $documents)
                   THEN m END) AS mentions
WHERE $documents IS NULL OR mentions > 0
WITH e, mentions
ORDER BY CASE WHEN e.id = $entity OR toLower(e.name) = toLower($entity) THEN 0 ELSE 1 END, mentions DESC, e.name
LIMIT 1
OPTIONAL MATCH (e)-[r:RELATED]-(other:Entity)
WITH e, mentions, r, other
OPTIONAL MATCH (rt:Triple {id: r.triple_id})
WITH e, mentions, other, rt
OPTIONAL MATCH (rd:Document {id: rt.document_id})
WITH e, mentions, collect(DISTINCT CASE WHEN coalesce(rd.status, 'complete') = 'complete'
                                           AND ($documents IS NULL OR rd.id IN $documents) THEN other END)[..$limit] AS neighbours
OPTIONAL MATCH (t:Triple)-[:SUBJECT|OBJECT]->(e)
WITH e, mentions, neighbours, t
OPTIONAL MATCH (td:Document {id: t.document_id})
WITH e, mentions, neighbours, collect(DISTINCT CASE WHEN coalesce(td.status, 'complete') = 'complete'
                                                     AND ($documents IS NULL OR td.id IN $documents) THEN t END)[..$limit] AS triples
OPTIONAL MATCH (c:Chunk)-[:MENTIONS]->(e)
WITH e, mentions, neighbours, triples, c
OPTIONAL MATCH (cd:Document {id: c.document_id})
WITH e, mentions, neighbours, triples,
     CASE WHEN coalesce(cd.status, 'complete') = 'complete' AND ($documents IS NULL OR cd.id IN $documents) THEN c END AS served
ORDER BY served.document_id, served.order
WITH e, mentions, neighbours, triples, collect(served)[..$limit] AS chunks
OPTIONAL MATCH (d:Document)
WHERE d.id IN [x IN chunks | x.document_id]
RETURN e AS entity, mentions, neighbours, triples, chunks, collect(d) AS documents
