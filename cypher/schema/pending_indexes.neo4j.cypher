// Indexes that do not serve queries yet (kbgraph.store GraphStore.await_indexes): Neo4j populates a new index in
// the background (state 'POPULATING'); a 'FAILED' one never will.
SHOW INDEXES YIELD name, labelsOrTypes, state, populationPercent
WHERE state <> 'ONLINE'
RETURN coalesce(labelsOrTypes[0], name) AS label, state + ' ' + toString(populationPercent) + '%' AS state
