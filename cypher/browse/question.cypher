// The rationale of a saved answer (`kbgraph ask --save`): the Question, the SubQuestions it PROPOSED, the
// AtomicQuestions they MATCHED (matched: score, selected), the Chunks it USED (used: round, score, rank) and
// the path from each chunk's Document through its Sections (provenance). $question: the Question's id or part
// of its text ('' = the last one asked). One row. Used chunks of a document that is not complete (still being
// written or left 'writing' by a killed run) are left out. Under a document scope ($documents,
// kbgraph.store.scope) only a question that used chunks and only chunks of its documents (the last such one for
// ''), and only the matched atomic questions of its documents.
MATCH (q:Question)
WHERE $question = '' OR q.id = $question OR toLower(q.text) CONTAINS toLower($question)
OPTIONAL MATCH (q)-[u0:USED]->(c0:Chunk)
WITH q, count(u0) AS used0, count(CASE WHEN NOT coalesce(c0.document_id IN $documents, false) THEN u0 END) AS outside0
WHERE $documents IS NULL OR (used0 > 0 AND outside0 = 0)
WITH q
ORDER BY q.asked_at DESC
LIMIT 1
OPTIONAL MATCH (q)-[:PROPOSED]->(s:SubQuestion)
WITH q, s
ORDER BY s.round, s.order
WITH q, collect(s) AS sub_questions
OPTIONAL MATCH (q)-[:PROPOSED]->(s:SubQuestion)-[m:MATCHED]->(a:AtomicQuestion)
WHERE $documents IS NULL OR a.document_id IN $documents
WITH q, sub_questions, collect(DISTINCT a) AS atomic_questions,
     [x IN collect({sub_question_id: s.id, atomic_question_id: a.id, score: m.score, selected: m.selected})
      WHERE x.atomic_question_id IS NOT NULL] AS matched
OPTIONAL MATCH (q)-[u:USED]->(c:Chunk)
WITH q, sub_questions, atomic_questions, matched, u, c
OPTIONAL MATCH (cd:Document {id: c.document_id})
WITH q, sub_questions, atomic_questions, matched, u,
     CASE WHEN coalesce(cd.status, 'complete') = 'complete' THEN c END AS served
ORDER BY u.round, u.rank
WITH q, sub_questions, atomic_questions, matched, collect(served) AS chunks,
     [x IN collect({chunk_id: served.id, round: u.round, score: u.score, rank: u.rank}) WHERE x.chunk_id IS NOT NULL]
     AS used
OPTIONAL MATCH path = (d:Document)-[:HAS_SECTION*0..12]->()-[:HAS_CHUNK]->(c:Chunk)
WHERE c.id IN [x IN chunks | x.id]
WITH q, sub_questions, atomic_questions, matched, chunks, used, collect(nodes(path)) AS paths
RETURN q AS question, sub_questions, atomic_questions, matched, chunks, used,
       [p IN paths | [n IN p WHERE NOT n:Chunk]] AS provenance
