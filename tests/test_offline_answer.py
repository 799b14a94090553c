"""The offline answer (no LLM): evidence a person can read, on the sample corpus.

Three questions of different kinds, each answered from a different file of examples/docs: a table cell
(the FBI NICS PDF), handbook prose (the DOJ chapter 13 DOCX) and an HTML page (Wikipedia's Duck). The
answer must be 1-3 lines, each a real sentence or a table row, never a heading or a caption, each ending
with a marker [n] of a citation whose chunk exists in the graph and contains the line. The table question
runs on both stores.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.query.evidence import quotable, sentences
from kbgraph.query.models import Answer, Citation
from kbgraph.settings import Settings
from kbgraph.store.base import Row

NICS = "docs/pdf/fbi_nics_background_checks_2015-11.pdf"
HANDBOOK = "docs/docx/us_doj_chapter13_standing_trustee_handbook.docx"
DUCK = "docs/html/wikipedia_duck.html"

TABLE_Q = "How many handgun checks were there in Kentucky in November 2015?"
PROSE_Q = "What are the duties of a standing trustee?"
HTML_Q = "What do ducks eat?"

_LINE = re.compile(r"^(?P<text>.+) \[(?P<n>\d+)\]$")
_REF = re.compile(r"\[(?:\d{1,3}|[a-z]|[a-z ]{3,24} needed|note \d{1,3}|nb \d{1,3})\]", re.I)


def _ingest(settings: Settings, examples_dir: Path, files: list[str]) -> KnowledgeBase:
    kb = KnowledgeBase(settings=settings)
    kb.reset()
    report = kb.ingest([examples_dir / f for f in files], progress=False)
    assert report.errors == [] and report.added == len(files), report
    return kb


@pytest.fixture(scope="module")
def sample_kb(falkor_settings: Settings, examples_dir: Path) -> Iterator[KnowledgeBase]:
    """The three sample files, ingested once on the embedded FalkorDB (no LLM)."""
    settings = falkor_settings.updated({"name": f"answers{uuid.uuid4().hex[:8]}"})
    kb = _ingest(settings, examples_dir, [NICS, HANDBOOK, DUCK])
    yield kb
    kb.reset()
    kb.close()


@pytest.fixture(scope="module")
def neo4j_kb(neo4j_settings: Settings, examples_dir: Path) -> Iterator[KnowledgeBase]:
    """The NICS report alone on the local Neo4j 5 (one file: the table question on the second store)."""
    kb = _ingest(neo4j_settings, examples_dir, [NICS])
    yield kb
    kb.reset()
    kb.close()


def _flat(text: str) -> str:
    return " ".join(_REF.sub("", text).replace("*", "").split())


def evidence_lines(kb: KnowledgeBase, answer: Answer) -> list[tuple[str, Row, Citation]]:
    """(line text, chunk row from the graph, citation) for each answer line. Asserts the shape: every line
    ends with a marker [n] naming one of the citations, every citation's chunk exists in the graph with
    its document, and the line's words stand in that chunk (a sentence verbatim, a table row cell by cell)."""
    assert answer.retrieval_only and answer.citations
    ids = [c.chunk_id for c in answer.citations]
    rows = {r["id"]: r for r in kb.store.run("retrieve/chunk_details", {"ids": ids})}
    assert set(rows) == set(ids), "a citation names a chunk that is not in the graph"
    for c in answer.citations:
        assert c.document_title == rows[c.chunk_id]["document_title"]
    lines = answer.answer.splitlines()
    assert 1 <= len(lines) <= 3, answer.answer
    out = []
    for line in lines:
        m = _LINE.match(line)
        assert m, f"no citation marker at the end of {line!r}"
        n = int(m["n"])
        assert 1 <= n <= len(answer.citations), f"marker [{n}] but {len(answer.citations)} citations"
        citation = answer.citations[n - 1]
        chunk = rows[citation.chunk_id]
        text = m["text"]
        if chunk.get("kind") == "table":
            for pair in text.split("; "):
                value = pair.rsplit(": ", 1)[-1]
                assert value in chunk["text"], f"{value!r} of {text!r} is not in the cited table"
        else:
            assert _flat(text.rstrip("…")) in _flat(chunk["text"]), f"{text!r} is not in the cited chunk"
        out.append((text, chunk, citation))
    return out


def _is_sentence(text: str) -> bool:
    """Independent of the code under test: starts like a sentence, ends like one, at least 4 words ('Ducks have
    many predators.' is one)."""
    return len(text.split()) >= 4 and text.rstrip("…")[-1] in '.!?;:)"”’' and text[0].isalnum()


@pytest.mark.slow  # sample_kb ingests three sample documents
def test_table_cell_question_answers_with_the_row(sample_kb: KnowledgeBase) -> None:
    answer = sample_kb.ask(TABLE_Q)
    lines = evidence_lines(sample_kb, answer)
    text, chunk, citation = lines[0]
    assert chunk["kind"] == "table" and citation.document_uri.endswith("fbi_nics_background_checks_2015-11.pdf")
    assert "State / Territory: Kentucky" in text and "Handgun: 12,155" in text
    # the named row, not a neighbour: no other state's row is offered as evidence
    for other in ("Kansas", "Ohio", "Tennessee", "Louisiana", "Totals"):
        assert f"State / Territory: {other};" not in answer.answer
    assert sample_kb.ask(TABLE_Q).answer == answer.answer  # deterministic


@pytest.mark.slow  # sample_kb ingests three sample documents
def test_handbook_question_answers_with_sentences(sample_kb: KnowledgeBase) -> None:
    answer = sample_kb.ask(PROSE_Q)
    lines = evidence_lines(sample_kb, answer)
    assert len(lines) >= 2
    assert "Summary of Standing Trustee Duties" not in answer.answer
    sections = {p.strip().lower() for c in answer.citations for p in c.section.split(" > ")}
    for text, _chunk, citation in lines:
        assert citation.document_uri.endswith("us_doj_chapter13_standing_trustee_handbook.docx"), citation
        assert _is_sentence(text), f"not a sentence: {text!r}"
        assert text.lower() not in sections
    assert any("trustee" in text.lower() and "dut" in text.lower() for text, _, _ in lines), answer.answer


@pytest.mark.slow  # sample_kb ingests three sample documents
def test_html_question_answers_from_the_page(sample_kb: KnowledgeBase) -> None:
    answer = sample_kb.ask(HTML_Q)
    lines = evidence_lines(sample_kb, answer)
    for text, _chunk, citation in lines:
        assert citation.document_uri.endswith("wikipedia_duck.html") and citation.document_title == "Duck"
        assert _is_sentence(text), f"not a sentence: {text!r}"
        assert not re.search(r"\[\d+\]", text[:-1]), f"a Wikipedia reference mark is left in {text!r}"
    first = lines[0][0].lower()
    assert "ducks eat" in first and "aquatic plants" in first, answer.answer


def test_units_split_and_filter() -> None:
    """The sentence splitter keeps list items and abbreviations whole and splits after reference marks;
    headings, captions and fragments are not quotable."""
    assert sentences("1. Be accountable for all property. 2. Investigate the U.S. Trustee's records.") == [
        "1. Be accountable for all property.",
        "2. Investigate the U.S. Trustee's records.",
    ]
    assert sentences("They are geese.[5] All except one belong here.[9][16] Next.") == [
        "They are geese.[5]",
        "All except one belong here.[9][16]",
        "Next.",
    ]
    for bad in (
        "Summary of Standing Trustee Duties",
        "Figure 3: Duck feeding",
        "Table 2 NICS checks by state",
        "Outstanding Checks",
        "1.",
        "CHAPTER 3 ADMINISTRATION OF CASES",
    ):
        assert not quotable(bad), bad
    for good in (
        "Ducks have many predators.",
        "The standing trustee must be personally involved in it.",
        "Disburse a debtor's plan payments on a monthly basis",
    ):
        assert quotable(good), good
    assert not quotable("Statutory duties of a standing trustee", {"statutory duties of a standing trustee"})


@pytest.mark.neo4j
@pytest.mark.slow  # starts the local Neo4j server (~40 s) and ingests the NICS report there
def test_table_cell_question_on_neo4j(neo4j_kb: KnowledgeBase) -> None:
    answer = neo4j_kb.ask(TABLE_Q)
    text, chunk, _citation = evidence_lines(neo4j_kb, answer)[0]
    assert chunk["kind"] == "table"
    assert "State / Territory: Kentucky" in text and "Handgun: 12,155" in text
