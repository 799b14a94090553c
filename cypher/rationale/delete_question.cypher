// Delete a saved Question with its SubQuestions and all their rationale edges.
OPTIONAL MATCH (s:SubQuestion {question_id: $id})
DETACH DELETE s
WITH count(s) AS sub_questions
OPTIONAL MATCH (q:Question {id: $id})
DETACH DELETE q
RETURN count(q) AS questions, sub_questions
