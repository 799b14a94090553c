// The passages in the graph of one corpus file: documents whose URI starts with $prefix ('<file uri>#'),
// how many are complete, and their URIs and titles (a skipped corpus still counts as seen for --prune, and
// its titles are linked from other corpora read in the same run).
MATCH (d:Document)
WHERE d.uri STARTS WITH $prefix
RETURN count(d) AS documents, count(CASE WHEN d.status = 'complete' THEN 1 END) AS complete,
       collect(d.uri) AS uris, collect([d.id, d.title]) AS titles
