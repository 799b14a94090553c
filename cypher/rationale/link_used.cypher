// (:Question)-[:USED {round, score, rank}]->(:Chunk): the chunks the answer rests on; round 0 for
// retrieval-only answers and baselines, else the Algorithm 1 round in which the chunk joined the context.
// Chunks deleted since are skipped.
UNWIND $rows AS row
MATCH (q:Question {id: $question_id})
MATCH (c:Chunk {id: row.chunk_id})
MERGE (q)-[u:USED]->(c)
SET u.round = row.round, u.score = row.score, u.rank = row.rank
RETURN count(u) AS linked
