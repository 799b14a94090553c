// kbgraph schema (uniqueness of Question.id); created idempotently by GraphStore.ensure_schema.
{{unique_index: question_id, Question, id}}
