// Complete documents whose title holds $text (case-insensitive), by title: the web app's Explore search when the
// full-text index (retrieve/fulltext_search, whole words) finds none, e.g. for a part of a word. A scan of the
// documents' titles. $limit: at most this many. Under a document scope ($documents, kbgraph.store.scope) its
// documents only.
MATCH (d:Document)
WHERE d.status = 'complete' AND toLower(d.title) CONTAINS toLower($text) AND ($documents IS NULL OR d.id IN $documents)
RETURN d.id AS id, d {.*, embedding: null, pending_embedding: null} AS properties
ORDER BY CASE WHEN toLower(d.title) = toLower($text) THEN 0 ELSE 1 END, d.title, d.id
LIMIT $limit
