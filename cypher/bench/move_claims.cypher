// benchmarks.scale_out: every IngestClaim made to look held on machine $machine (whose death nobody here sees).
MATCH (c:IngestClaim)
SET c.machine = $machine
