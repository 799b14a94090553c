// One page of the document cards of kbgraph.query.propagation.cards (issue 56: documents that can be told apart): in
// document id order after $after, at most $limit rows, each 'complete' Document with its title, its other usable
// titles (title_alternatives, kbgraph.ingest.titles), its URI (the file name's words) and the texts of its first
// 4 chunks of its first page (page 1, or any page for a format without pages), in reading order: where a
// report prints its issuer, year, revision and version; and its number of chunks (a document of one chunk, a
// passage, gets no card). Every complete document: a document scope is applied when the
// cards are searched (not declared here: the build is never restricted).
MATCH (d:Document)
WHERE d.id > $after AND d.status = 'complete'
WITH d
ORDER BY d.id
LIMIT $limit
OPTIONAL MATCH (c:Chunk {document_id: d.id})
WITH d, c
ORDER BY d.id, c.order
WITH d, collect(CASE WHEN c.page IS NULL OR c.page <= 1 THEN c.text END) AS texts, count(c) AS chunks
RETURN d.id AS id, d.title AS title, d.title_alternatives AS alternatives, d.uri AS uri,
       texts[0..4] AS texts, chunks
ORDER BY id
