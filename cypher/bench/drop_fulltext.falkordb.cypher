// benchmarks.store_bytes: drop the full-text index of label $label (FalkorDB: one per label).
CALL db.idx.fulltext.drop($label)
