"""Page-level gold and metrics of long-document sets (kbgraph.eval.pages): page@k, doc@k and page_recall@k on
hand-computed rankings; loading a set with a documents folder; the summary recomputing them from stored keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbgraph.errors import ConfigError
from kbgraph.eval import QuestionRecord, load_dataset, summarize
from kbgraph.eval.pages import (
    doc_hit_at_k,
    page_hit_at_k,
    page_key,
    page_metrics,
    page_recall_at_k,
    relative_document,
    split_key,
)

GOLD = [page_key("manuals/r-admin.pdf", 12), page_key("manuals/r-admin.pdf", 13)]
# rank 1: the right document, another page; rank 2: another document on the gold page number; rank 3: gold
RANKED = [
    page_key("manuals/r-admin.pdf", 40),
    page_key("manuals/r-intro.pdf", 12),
    page_key("manuals/r-admin.pdf", 13),
    page_key("manuals/r-admin.pdf", 13),
]


def test_page_key_round_trips() -> None:
    assert split_key(page_key("a/b.pdf", 7)) == ("a/b.pdf", 7)
    assert split_key(page_key("a#p/b.pdf", None)) == ("a#p/b.pdf", 0)
    with pytest.raises(ValueError):
        split_key("no-key")


@pytest.mark.parametrize(
    ("k", "page", "doc", "recall"), [(1, 0.0, 1.0, 0.0), (2, 0.0, 1.0, 0.0), (3, 1.0, 1.0, 0.5), (10, 1.0, 1.0, 0.5)]
)
def test_metrics_by_hand(k: int, page: float, doc: float, recall: float) -> None:
    assert page_hit_at_k(RANKED, GOLD, k) == page
    assert doc_hit_at_k(RANKED, GOLD, k) == doc
    assert page_recall_at_k(RANKED, GOLD, k) == recall


def test_a_page_of_another_document_is_no_hit() -> None:
    ranked = [page_key("manuals/r-intro.pdf", 12), page_key("manuals/r-intro.pdf", 13)]
    assert page_hit_at_k(ranked, GOLD, 2) == 0.0
    assert doc_hit_at_k(ranked, GOLD, 2) == 0.0
    assert page_recall_at_k(ranked, GOLD, 2) == 0.0


def test_both_pages_give_full_recall() -> None:
    ranked = [page_key("manuals/r-admin.pdf", 13), page_key("manuals/r-admin.pdf", 12)]
    assert page_recall_at_k(ranked, GOLD, 2) == 1.0
    assert page_recall_at_k(ranked, GOLD, 1) == 0.5


def test_a_bare_file_name_matches_in_any_folder() -> None:
    gold = [page_key("report.pdf", 3)]
    assert page_hit_at_k([page_key("gov/report.pdf", 3)], gold, 1) == 1.0
    assert page_hit_at_k([page_key("gov/report.pdf", 4)], gold, 1) == 0.0
    assert doc_hit_at_k([page_key("gov/report.pdf", 4)], gold, 1) == 1.0
    assert page_recall_at_k([page_key("gov/report.pdf", 3)], gold, 1) == 1.0
    # a gold path with a folder matches that path only
    assert page_hit_at_k([page_key("other/report.pdf", 3)], [page_key("gov/report.pdf", 3)], 1) == 0.0


def test_no_gold_is_none_and_bad_k_raises() -> None:
    assert page_hit_at_k(RANKED, [], 5) is None
    assert page_metrics(RANKED, [], [5]) == {}
    with pytest.raises(ValueError):
        doc_hit_at_k(RANKED, GOLD, 0)


def test_relative_document(tmp_path: Path) -> None:
    (tmp_path / "gov").mkdir()
    f = tmp_path / "gov" / "x.pdf"
    f.write_bytes(b"%PDF")
    assert relative_document(str(f), tmp_path) == "gov/x.pdf"
    assert relative_document(str(f), tmp_path / "elsewhere") == "x.pdf"
    assert relative_document(str(f), None) == "x.pdf"


def _write_set(root: Path, gold_document: str) -> Path:
    (root / "documents" / "gov").mkdir(parents=True)
    (root / "documents" / "gov" / "x.pdf").write_bytes(b"%PDF-1.4")
    q = {"id": "q1", "question": "what?", "gold_pages": [{"document": gold_document, "page": 2}]}
    (root / "dev.questions.jsonl").write_text(json.dumps(q) + "\n")
    return root / "dev.questions.jsonl"


def test_load_a_set_with_documents(tmp_path: Path) -> None:
    ds = load_dataset(_write_set(tmp_path, "gov/x.pdf"))
    assert ds.documents_path == tmp_path / "documents"
    assert ds.corpus_path is None
    assert ds.questions[0].gold_page_keys == [page_key("gov/x.pdf", 2)]


def test_a_missing_gold_document_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="gov/y.pdf"):
        load_dataset(_write_set(tmp_path, "gov/y.pdf"))


def test_a_page_below_one_is_refused(tmp_path: Path) -> None:
    path = _write_set(tmp_path, "gov/x.pdf")
    path.write_text(json.dumps({"question": "q", "gold_pages": [{"document": "gov/x.pdf", "page": 0}]}) + "\n")
    with pytest.raises(ConfigError, match="line 1"):
        load_dataset(path)


def test_summary_recomputes_page_metrics() -> None:
    recs = [
        QuestionRecord(
            question_id="1",
            method="dense",
            question="a",
            gold_pages=GOLD,
            retrieved_pages=RANKED,
            metrics={"page@1": 1.0},
        ),  # a stale stored figure: recomputed, not read
        QuestionRecord(
            question_id="2",
            method="dense",
            question="b",
            gold_pages=GOLD,
            retrieved_pages=[page_key("manuals/r-admin.pdf", 12)],
        ),
    ]
    ms = summarize(recs, methods=["dense"], ks=[1, 5])["dense"]
    assert ms.metrics["page@1"] == 0.5
    assert ms.metrics["page@5"] == 1.0
    assert ms.metrics["doc@1"] == 1.0
    assert ms.metrics["page_recall@5"] == 0.5  # (1/2 + 1/2) / 2


def test_figures_by_domain() -> None:
    from kbgraph.eval.summary import summarize_by_domain

    def rec(qid: str, domain: str | None, pages: list[str]) -> QuestionRecord:
        return QuestionRecord(
            question_id=qid, method="dense", question=qid, gold_pages=GOLD, retrieved_pages=pages, domain=domain
        )

    hit, miss = [GOLD[0]], [page_key("manuals/r-intro.pdf", 1)]
    recs = [rec("1", "manuals", hit), rec("2", "manuals", miss), rec("3", "papers", hit)]
    by = summarize_by_domain(recs, methods=["dense"], ks=[1])
    assert list(by) == ["manuals", "papers"]
    assert by["manuals"]["dense"].metrics["page@1"] == 0.5 and by["papers"]["dense"].metrics["page@1"] == 1.0
    assert summarize_by_domain(recs[:2], methods=["dense"], ks=[1]) == {}  # one domain: nothing to split
