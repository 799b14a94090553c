// kbgraph schema (uniqueness of SubQuestion.id); created idempotently by GraphStore.ensure_schema.
{{unique_index: sub_question_id, SubQuestion, id}}
