// A saved answer (kbgraph ask --save): one Question node per ask, its answer and how it was found; method
// 'auto' adds its question class and route (null, i.e. no property, for other methods).
MERGE (q:Question {id: $id})
SET q.text = $text, q.asked_at = $asked_at, q.answer = $answer, q.method = $method,
    q.rationale = $rationale, q.retrieval_only = $retrieval_only, q.rounds = $rounds,
    q.question_class = $question_class, q.question_subtype = $question_subtype, q.route = $route
RETURN q.id AS id
