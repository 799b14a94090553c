"""Answer and retrieval metrics of `kbgraph eval` (kbgraph.eval.metrics; PIKE-RAG §6.1)."""

from __future__ import annotations

import pytest

from kbgraph.eval import metrics as M


def test_answers_are_normalised_as_squad_does() -> None:
    assert M.normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert M.exact_match("an Apple.", "apple") == 1.0
    assert M.exact_match("apples", "apple") == 0.0


def test_token_f1_precision_recall() -> None:
    s = M.token_scores("the big red dog", "red dog barks")
    assert (s.precision, s.recall) == (pytest.approx(2 / 3), pytest.approx(2 / 3)) and s.em == 0.0  # type: ignore[comparison-overlap]
    assert s.f1 == pytest.approx(2 / 3)
    assert M.token_scores("", "").f1 == 1.0 and M.token_scores("x", "").f1 == 0.0
    assert M.token_scores("cat", "dog").f1 == 0.0


def test_several_labels_take_each_metrics_maximum() -> None:
    s = M.answer_scores("Paris France", ["paris", "Paris, France"])
    assert s.em == 1.0 and s.f1 == 1.0
    assert M.answer_scores("x", []) == M.AnswerScores()


def test_recall_at_k_counts_distinct_gold_passages() -> None:
    ranked = ["a", "b", "a", "c", "d"]
    assert M.recall_at_k(ranked, ["a", "c"], 1) == 0.5
    assert M.recall_at_k(ranked, ["a", "c"], 3) == 1.0  # the repeated 'a' takes no rank
    assert M.recall_at_k(ranked, [], 3) is None
    with pytest.raises(ValueError):
        M.recall_at_k(ranked, ["a"], 0)
    assert M.supporting_fact_recall(["a", "z"], ["a", "b"]) == 0.5


def test_passage_ids_come_from_the_uri_fragment_in_rank_order() -> None:
    assert M.passage_id("file:///c.jsonl#musique%3A6") == "musique:6"
    assert M.passage_id("file:///doc.pdf") == "file:///doc.pdf"
    assert M.passage_ids(["file:///c#b", "file:///c#a", "file:///c#b", ""]) == ["b", "a"]
    assert M.mean([1.0, None, 3.0]) == 2.0 and M.mean([None]) is None
