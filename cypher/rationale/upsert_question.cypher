// A saved answer (kbgraph ask --save): one Question node per ask, its answer and how it was found.
MERGE (q:Question {id: $id})
SET q.text = $text, q.asked_at = $asked_at, q.answer = $answer, q.method = $method,
    q.rationale = $rationale, q.retrieval_only = $retrieval_only, q.rounds = $rounds
RETURN q.id AS id
