// (:SubQuestion)-[:MATCHED {score, rank, selected}]->(:AtomicQuestion): the candidates each proposal
// retrieved (Algorithm 1 line 4, cosine similarity) and the one selected (line 5). Deleted atoms are skipped.
UNWIND $rows AS row
MATCH (s:SubQuestion {id: row.sub_question_id})
MATCH (a:AtomicQuestion {id: row.atomic_question_id})
MERGE (s)-[m:MATCHED]->(a)
SET m.score = row.score, m.rank = row.rank, m.selected = row.selected
RETURN count(m) AS linked
