// (:Question)-[:PROPOSED {round}]->(:SubQuestion): the atomic queries proposed in each round (Algorithm 1
// line 3), and the question itself where a backup retrieval used it (fallback = 'question_atoms' ...).
UNWIND $rows AS row
MATCH (q:Question {id: $question_id})
MERGE (s:SubQuestion {id: row.id})
SET s.text = row.text, s.round = row.round, s.order = row.order, s.fallback = row.fallback,
    s.question_id = $question_id
MERGE (q)-[p:PROPOSED]->(s)
SET p.round = row.round
RETURN count(s) AS written
