// How many chunks the knowledge base holds (kbgraph.query.scope: the share of them a document scope holds).
MATCH (c:Chunk)
RETURN count(c) AS n
