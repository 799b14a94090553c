// kbgraph schema (uniqueness of AtomicQuestion.id); created idempotently by GraphStore.ensure_schema.
{{unique_index: atomic_question_id, AtomicQuestion, id}}
