// Top-k nodes of one label's vector index. score: cosine distance 1 - cos, in [0, 2] (0 = identical).
CALL db.idx.vector.queryNodes($label, 'embedding', $k, vecf32($embedding)) YIELD node, score
RETURN node.id AS id, score, node {.*, embedding: null} AS properties
ORDER BY score ASC
