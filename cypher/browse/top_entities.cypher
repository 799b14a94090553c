// The most connected entities: degree = chunks that MENTION the entity + entities it is RELATED to (either
// direction). $limit: how many. One row per entity, highest degree first. Only what complete documents hold:
// mentions by chunks and RELATED edges (by their triple) of a document that is not complete are not counted.
// Under a document scope ($documents, kbgraph.store.scope) only entities its documents' chunks mention, with the
// mentions and RELATED edges of its documents only.
MATCH (e:Entity)
OPTIONAL MATCH (e)<-[m:MENTIONS]-(mc:Chunk)
WITH e, m, mc
OPTIONAL MATCH (md:Document {id: mc.document_id})
WITH e, count(CASE WHEN coalesce(md.status, 'complete') = 'complete' AND ($documents IS NULL OR md.id IN $documents)
                   THEN m END) AS mentions
WHERE $documents IS NULL OR mentions > 0
OPTIONAL MATCH (e)-[r:RELATED]-(:Entity)
WITH e, mentions, r
OPTIONAL MATCH (rt:Triple {id: r.triple_id})
WITH e, mentions, r, rt
OPTIONAL MATCH (rd:Document {id: rt.document_id})
WITH e, mentions, count(CASE WHEN coalesce(rd.status, 'complete') = 'complete'
                                AND ($documents IS NULL OR rd.id IN $documents) THEN r END) AS related
RETURN e AS entity, e.name AS name, e.type AS type, mentions, related, mentions + related AS degree
ORDER BY degree DESC, name
LIMIT $limit
