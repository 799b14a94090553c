// Indexes that do not serve queries yet (kbgraph.store GraphStore.await_indexes): FalkorDB builds an index in the
// background, and db.idx.fulltext.queryNodes and db.idx.vector.queryNodes answer no rows while its status is
// '[Indexing] n/m: UNDER CONSTRUCTION' (measured on 4.16: 0 hits for ~1.2 s after indexing 300k nodes).
CALL db.indexes() YIELD label, status
WITH label, status
WHERE status <> 'OPERATIONAL'
RETURN label, status AS state
