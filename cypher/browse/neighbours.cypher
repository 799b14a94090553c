// A node and one page of its neighbours (the web app's Explore, kbgraph.serve.explore). $id: the node's id, looked
// up on each label's id index (one OPTIONAL MATCH per label kbgraph writes: a lookup without a label would scan
// every node). $skip, $limit: the page of neighbours, ordered by relationship type, label and id. One row: the
// node, its label, its `document` (the Document its document_id names, if any: a chunk under sections is two hops
// from it), `total` (its neighbours shown, every page) and `neighbours` (the page: the relationship's type, the id
// of its start node, the neighbour's label and the neighbour); no row for an unknown id. Only what complete
// documents hold: a node of a document that is not complete is not found, and such nodes are not neighbours.
// A hub's neighbours are all sorted to count them and cut the page (an entity of 10^5 mentions: one sort).
// Under a document scope ($documents, kbgraph.store.scope) only what its documents hold: the node is found if it
// is one of its documents or of one of them, or an entity or tag with a neighbour shown; a neighbour is shown if
// it is one of its documents or of one, an entity a node of one MENTIONS or names (SUBJECT, OBJECT), an entity
// RELATED by a triple of one, or a tag a chunk of one is TAGGED with; never a saved question, sub-question, run,
// tag class or query tag (they are of no one document).
OPTIONAL MATCH (a:Document {id: $id})
OPTIONAL MATCH (b:Section {id: $id})
OPTIONAL MATCH (c:Chunk {id: $id})
OPTIONAL MATCH (d:AtomicQuestion {id: $id})
OPTIONAL MATCH (e:Triple {id: $id})
OPTIONAL MATCH (f:Entity {id: $id})
OPTIONAL MATCH (g:Tag {id: $id})
OPTIONAL MATCH (h:TagClass {id: $id})
OPTIONAL MATCH (i:IngestionRun {id: $id})
OPTIONAL MATCH (j:Question {id: $id})
OPTIONAL MATCH (k:SubQuestion {id: $id})
WITH coalesce(a, b, c, d, e, f, g, h, i, j, k) AS n
WHERE n IS NOT NULL
OPTIONAL MATCH (nd:Document {id: n.document_id})
WITH n, nd
WHERE CASE WHEN n:Document THEN n.status = 'complete' ELSE coalesce(nd.status, 'complete') = 'complete' END
  AND ($documents IS NULL OR n.id IN $documents OR nd.id IN $documents OR n:Entity OR n:Tag)
OPTIONAL MATCH (n)-[r]-(m)
WITH n, nd, r, m
OPTIONAL MATCH (md:Document {id: m.document_id})
WITH n, nd, r, m, md
OPTIONAL MATCH (rt:Triple {id: CASE WHEN $documents IS NULL OR type(r) <> 'RELATED' THEN null ELSE r.triple_id END})
WITH n, nd, r, m,
     CASE WHEN m IS NULL THEN false WHEN m:Document THEN m.status = 'complete'
          ELSE coalesce(md.status, 'complete') = 'complete' END
     AND ($documents IS NULL OR m.id IN $documents OR md.id IN $documents
          OR (m:Entity AND type(r) IN ['MENTIONS', 'SUBJECT', 'OBJECT']) OR (m:Entity AND rt.document_id IN $documents)
          OR (m:Tag AND type(r) = 'TAGGED')) AS shown
ORDER BY type(r), labels(m)[0], m.id
WITH n, nd, collect(CASE WHEN shown THEN {type: type(r), source: startNode(r).id, label: labels(m)[0], node: m} END) AS found
WHERE $documents IS NULL OR NOT (n:Entity OR n:Tag) OR size(found) > 0
RETURN n AS node, labels(n)[0] AS label, nd AS document, size(found) AS total, found[$skip..($skip + $limit)] AS neighbours
