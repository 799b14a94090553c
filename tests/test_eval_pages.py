"""A long-document set end to end (kbgraph.eval with kbgraph.eval.pages) on the session's embedded FalkorDB:
two real PDFs written with pymupdf into a ``documents/`` folder, questions with ``gold_pages``; the documents are
ingested by the real pipeline and page@k / doc@k come from the pages of the chunks the knowledge base returned
(re-read from the store here), in the summary, the report and by domain."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pymupdf
import pytest

from kbgraph.eval import evaluate
from kbgraph.eval.pages import doc_hit_at_k, page_hit_at_k, page_key
from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings

PAGES = {
    "harbour/annual_report.pdf": [
        "The Harbour Authority welcomed 412 cruise ships in the year, eleven more than the year before.",
        "Dredging of the northern channel to a depth of fourteen metres was finished in October.",
        "The pilot boat fleet was renewed: three hybrid vessels replaced the diesel boats built in 1988.",
    ],
    "garden/manual.pdf": [
        "To prune a rose bush, cut each cane just above an outward-facing bud at a 45 degree angle.",
        "Tomato seedlings are planted out once night temperatures stay above ten degrees Celsius.",
        "Compost heaps need turning every two weeks so that air reaches the microbes inside.",
    ],
}
QUESTIONS = [
    ("q1", "How many cruise ships called at the harbour?", "harbour/annual_report.pdf", 1, "government"),
    ("q2", "How deep was the northern channel dredged?", "harbour/annual_report.pdf", 2, "government"),
    ("q3", "When can tomato seedlings be planted outside?", "garden/manual.pdf", 2, "manuals"),
    ("q4", "How often should a compost heap be turned?", "garden/manual.pdf", 3, "manuals"),
]


@pytest.fixture(scope="module")
def longdoc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("longdoc")
    for rel, pages in PAGES.items():
        path = root / "documents" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = pymupdf.open()
        for text in pages:
            doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 520, 300), text, fontsize=11)
        doc.save(path)
    lines = [
        json.dumps({"id": qid, "question": q, "gold_pages": [{"document": d, "page": p}], "meta": {"domain": dom}})
        for qid, q, d, p, dom in QUESTIONS
    ]
    (root / "dev.questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root / "dev"


def test_page_metrics_come_from_the_pages_the_kb_returned(
    falkor_settings: Settings, longdoc: Path, tmp_path: Path
) -> None:
    # chunks of about one sentence: each page its own chunks (a 256-word chunk would hold all three pages)
    settings = falkor_settings.updated(
        {"name": f"pages{uuid.uuid4().hex[:8]}", "llm_model": None, "chunk_tokens": 20, "chunk_overlap_sentences": 0}
    )
    with KnowledgeBase(settings=settings) as kb:
        try:
            summary = evaluate(
                kb,
                longdoc,
                methods=["dense", "propagation"],
                out=tmp_path / "run",
                llm=None,
                progress=False,
                plots=False,
            )
            assert summary.ingest is not None and summary.ingest["added"] == 2 and summary.ingest["failed"] == 0
            records = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
            assert len(records) == 2 * len(QUESTIONS)
            for r in records:
                assert r["error"] is None and r["gold_pages"]
                # each retrieved chunk's key is its document (relative to documents/) and page, as the store has them
                rows = {
                    row["id"]: row for row in kb.store.run("retrieve/chunk_details", {"ids": r["retrieved_chunk_ids"]})
                }
                expect = []
                for cid in r["retrieved_chunk_ids"]:
                    uri, page = rows[cid]["document_uri"], rows[cid]["page"]
                    rel = next(d for d in PAGES if uri.endswith(d))
                    expect.append(page_key(rel, page))
                assert r["retrieved_pages"] == expect
                assert r["metrics"]["page@5"] == page_hit_at_k(expect, r["gold_pages"], 5)
                assert r["metrics"]["doc@1"] == doc_hit_at_k(expect, r["gold_pages"], 1)
            dense = summary.methods["dense"].metrics
            mine = [x for x in records if x["method"] == "dense"]
            assert dense["page@1"] == sum(x["metrics"]["page@1"] for x in mine) / len(mine)
            assert dense["doc@10"] == 1.0  # two documents: every top 10 holds the right one
            assert dense["page@1"] is not None and dense["page@1"] >= 0.5  # the questions name their page's facts
            assert set(summary.by_domain) == {"government", "manuals"}
            report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
            assert "## Evidence pages (gold_pages)" in report and "| government | dense |" in report
        finally:
            kb.reset()
