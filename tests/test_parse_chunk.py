"""Ingestion stages 1-2 (parse, structure, chunk) on the real documents of examples/docs. No mocks.

The expected figures were read off the documents themselves (the NICS table rendered as an image, the
handbook's heading styles in Word), not off the parser's output.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest

from kbgraph.errors import IngestError
from kbgraph.ingest.chunk import build_structure
from kbgraph.ingest.decode import decode_text
from kbgraph.ingest.parse import Element, ParsedDocument, parse_file, parse_passages_jsonl
from kbgraph.ingest.tables import summarize_table
from kbgraph.models import ChunkRecord, DocumentRecord, SectionRecord, stable_id
from kbgraph.text import parse_markdown_table

MAX = 50 * 1024 * 1024


#: a parsed file and its structure (Document, Sections, Chunks)
Parsed = tuple[ParsedDocument, tuple[DocumentRecord, list[SectionRecord], list[ChunkRecord]]]


@pytest.fixture(scope="module")
def docs(examples_dir: Path) -> Path:
    return examples_dir / "docs"


@pytest.fixture(scope="module")
def handbook(docs: Path) -> Parsed:
    """The DOJ Chapter 13 trustee handbook (DOCX, ~4,750 paragraphs), parsed and chunked once."""
    parsed = parse_file(docs / "docx" / "us_doj_chapter13_standing_trustee_handbook.docx", max_bytes=MAX)
    return parsed, build_structure(parsed)


@pytest.fixture(scope="module")
def duck(docs: Path) -> Parsed:
    parsed = parse_file(docs / "html" / "wikipedia_duck.html", max_bytes=MAX)
    return parsed, build_structure(parsed)


@pytest.fixture(scope="module")
def nics(docs: Path) -> Parsed:
    parsed = parse_file(docs / "pdf" / "fbi_nics_background_checks_2015-11.pdf", max_bytes=MAX)
    return parsed, build_structure(parsed)


# --- PDF ------------------------------------------------------------------------------------------------


def test_nics_table_keeps_each_state_on_its_own_row(nics: Parsed) -> None:
    """The NICS report rules a line every five states, so a grid cell holds five states; each must come out
    as its own row with its own figures. Kentucky (4th state of its group): Permit 264,140, Handgun 12,155,
    Long Gun 14,847 (read off the rendered page)."""
    parsed, (document, sections, chunks) = nics
    tables = [c for c in chunks if c.kind == "table"]
    assert len(tables) == 1
    caption, header, rows = parse_markdown_table(tables[0].text)
    assert caption and "NICS Firearm Background Checks" in caption
    assert header[:4] == ["State / Territory", "Permit", "Handgun", "Long Gun"]
    assert "Pre-Pawn Handgun" in header and header[-1] == "Totals"
    by_state = {r[0]: r for r in rows}
    assert by_state["Kentucky"][1:4] == ["264,140", "12,155", "14,847"]
    assert by_state["Alabama"][1:4] == ["18,870", "23,022", "22,650"]
    assert "| Kentucky | 264,140 | 12,155 | 14,847 |" in tables[0].text
    assert len(rows) >= 55  # 50 states, DC, territories, Totals
    assert tables[0].page == 1
    assert tables[0].summary == summarize_table(tables[0].text)
    assert tables[0].summary.startswith('Table "NICS Firearm Background Checks')
    assert "State / Territory, Permit, Handgun" in tables[0].summary
    assert parsed.title.startswith("NICS Firearm Background Checks")


def test_every_pdf_parses_with_pages(docs: Path) -> None:
    pdfs = sorted((docs / "pdf").glob("*.pdf"))
    assert len(pdfs) >= 6
    for pdf in pdfs:
        parsed = parse_file(pdf, max_bytes=MAX)
        assert parsed.mime == "application/pdf" and len(parsed.sha256) == 64
        _, _, chunks = build_structure(parsed)
        assert chunks, pdf.name
        assert all(c.page is not None and c.page >= 1 for c in chunks), pdf.name
        assert all(c.text.strip() for c in chunks), pdf.name


def test_federal_register_headings_tables_and_running_headers(docs: Path) -> None:
    parsed = parse_file(docs / "pdf" / "us_federal_register_2020-17221.pdf", max_bytes=MAX)
    document, sections, chunks = build_structure(parsed)
    titles = {s.title for s in sections}
    assert {"Background", "Proposed Design Changes", "Costs of Compliance"} <= titles
    assert max(c.page for c in chunks) == 15  # type: ignore[type-var]
    # the running header 'Federal Register / Vol. 85, No. 152 / ...' of every page is not body text
    assert not any("Federal Register / Vol. 85" in c.text for c in chunks if c.kind == "text")
    costs = [c for c in chunks if c.kind == "table"]
    assert len(costs) == 2 and all("Labor cost" in c.text for c in costs)


def test_warn_report_tables_continue_across_pages(docs: Path) -> None:
    parsed = parse_file(docs / "pdf" / "california_edd_warn_report_2015-2016.pdf", max_bytes=MAX)
    tables = [e for e in parsed.elements if e.kind == "table"]
    assert len(tables) == 17 and len({t.page for t in tables}) == 16
    # pages 2-15 have no header row of their own: they reuse page 1's
    assert all("| Notice Date | Effective | Received | Company | City |" in t.markdown for t in tables[:15])  # type: ignore[operator]
    # the monthly summary starts on page 15 with its own header and continues on page 16
    assert [t.page for t in tables[15:]] == [15, 16]
    assert all(t.markdown.startswith("| Summary by Month | Notices | Employees Affected |") for t in tables[15:])  # type: ignore[union-attr]
    assert "| 06/22/2015 | 03/25/2016 | 07/01/2015 | Maxim Integrated Product | San Jose | 150 |" in tables[0].markdown  # type: ignore[operator]


# --- DOCX / HTML ----------------------------------------------------------------------------------------


def test_docx_handbook_section_tree(handbook: Parsed) -> None:
    parsed, (document, sections, chunks) = handbook
    by_path = {s.path: s for s in sections}
    ch1 = by_path["CHAPTER 1 – INTRODUCTION"]
    assert ch1.level == 1 and ch1.parent_id == document.id
    purpose = by_path["CHAPTER 1 – INTRODUCTION > A. PURPOSE"]
    assert purpose.level == 2 and purpose.parent_id == ch1.id
    oath = by_path["CHAPTER 3 - ADMINISTRATION OF CHAPTER 13 CASES > B. MEETING OF CREDITORS > 6. OATH"]
    assert oath.level == 3 and oath.parent_id == by_path[oath.path.rsplit(" > ", 1)[0]].id
    assert len(sections) >= 290 and sum(s.level == 1 for s in sections) >= 10
    assert len({s.id for s in sections}) == len(sections)
    oath_chunks = [c for c in chunks if c.parent_id == oath.id]
    assert oath_chunks and all(c.section_path == oath.path for c in oath_chunks)
    assert any("oath" in c.text.lower() for c in oath_chunks)
    assert sum(c.kind == "table" for c in chunks) == 2
    assert all(len(c.text.split()) <= 256 for c in chunks if c.kind == "text")
    assert [c.order for c in chunks] == list(range(len(chunks)))
    assert document.mime.endswith("wordprocessingml.document")


def test_wikipedia_html_sections_and_chunks(duck: Parsed) -> None:
    parsed, (document, sections, chunks) = duck
    assert parsed.title == "Duck"
    paths = {s.path for s in sections}
    assert {
        "Duck > Etymology",
        "Duck > Behaviour > Feeding",
        "Duck > Relationship with humans > Domestication",
    } <= paths
    assert len(sections) >= 10 and len(chunks) >= 10
    feeding = next(c for c in chunks if c.section_path == "Duck > Behaviour > Feeding")
    assert "Dabbling ducks" in feeding.text
    # the 136-language picker and category link lists are navigation, not content
    assert not any("Afrikaans" in c.text for c in chunks)
    assert any(c.kind == "table" and "Anatidae" in c.text for c in chunks)


def test_chunks_respect_the_size_and_overlap(duck: Parsed) -> None:
    parsed, _ = duck
    _, _, chunks = build_structure(parsed, chunk_tokens=60, overlap_sentences=1)
    assert all(len(c.text.split()) <= 60 for c in chunks if c.kind == "text")
    # known sentences: each chunk after the first starts with the previous chunk's last sentence
    sentences = [f"Sentence number {i} says that ducks number {i} quack loudly." for i in range(30)]
    doc = ParsedDocument(
        uri="test:overlap",
        title="t",
        mime="text/plain",
        sha256="0" * 64,
        elements=[
            Element(kind="text", text=" ".join(sentences[:15])),
            Element(kind="text", text=" ".join(sentences[15:])),
        ],
    )
    _, _, chunks = build_structure(doc, chunk_tokens=40, overlap_sentences=1)
    assert len(chunks) >= 7 and all(len(c.text.split()) <= 40 for c in chunks)
    for a, b in itertools.pairwise(chunks):
        last = [s for s in sentences if s in a.text][-1]
        assert b.text.startswith(last)
    covered = [s for s in sentences if any(s in c.text for c in chunks)]
    assert covered == sentences
    assert "\n\n" in next(c.text for c in chunks if sentences[15] in c.text and sentences[14] in c.text)
    _, _, plain = build_structure(doc, chunk_tokens=40, overlap_sentences=0)
    assert sum(len(c.text.split()) for c in plain) == sum(len(s.split()) for s in sentences)


# --- errors ---------------------------------------------------------------------------------------------


def _raises(path: Path, match: str, max_bytes: int = MAX) -> str:
    with pytest.raises(IngestError, match=match) as info:
        parse_file(path, max_bytes=max_bytes)
    msg = str(info.value)
    assert "\n" not in msg and path.name in msg
    return msg


def test_bad_inputs_raise_clear_errors(docs: Path, tmp_path: Path) -> None:
    import pymupdf

    real = (docs / "pdf" / "us_federal_register_2020-17221.pdf").read_bytes()
    (tmp_path / "truncated.pdf").write_bytes(real[: len(real) // 2])
    _raises(tmp_path / "truncated.pdf", r"truncated or corrupt PDF")

    (tmp_path / "zero.pdf").write_bytes(b"")
    _raises(tmp_path / "zero.pdf", r"empty file \(0 bytes\)")
    (tmp_path / "zero.txt").write_bytes(b"")
    _raises(tmp_path / "zero.txt", r"empty file \(0 bytes\)")
    (tmp_path / "blank.txt").write_text("  \n\n\t  \n")
    _raises(tmp_path / "blank.txt", r"empty file \(only whitespace\)")

    locked = pymupdf.open()
    locked.new_page().insert_text((72, 72), "Secret text")
    locked.save(tmp_path / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="x", owner_pw="y")  # type: ignore[attr-defined]
    locked.close()
    _raises(tmp_path / "locked.pdf", r"password-protected PDF")

    noise = os.urandom(4096)
    (tmp_path / "noise.pdf").write_bytes(noise)
    _raises(tmp_path / "noise.pdf", r"corrupt or unreadable PDF")
    (tmp_path / "noise.docx").write_bytes(noise)
    _raises(tmp_path / "noise.docx", r"corrupt or unreadable \.docx")

    blank = pymupdf.open()
    blank.new_page()
    blank.save(tmp_path / "scan.pdf")
    blank.close()
    _raises(tmp_path / "scan.pdf", r"no extractable text")

    _raises(docs / "pdf" / "fbi_nics_background_checks_2015-11.pdf", r"file too large.*max_file_bytes", max_bytes=1000)

    (tmp_path / "data.xyz").write_text("hello")
    msg = _raises(tmp_path / "data.xyz", r"unsupported file type '\.xyz'")
    assert ".pdf" in msg and ".docx" in msg


def test_non_utf8_text_is_decoded(tmp_path: Path) -> None:
    cp1252 = "Café crème brûlée à la française — “quoted” for 10 €. Naïve façade."
    latin1 = "Le garçon a mangé une crêpe près de la forêt. Ça coûte très cher, déjà."
    (tmp_path / "cp1252.txt").write_bytes(cp1252.encode("cp1252"))
    (tmp_path / "latin1.txt").write_bytes(latin1.encode("latin-1"))
    assert parse_file(tmp_path / "cp1252.txt", max_bytes=MAX).elements[0].text == cp1252
    parsed = parse_file(tmp_path / "latin1.txt", max_bytes=MAX)
    assert parsed.elements[0].text == latin1 and parsed.mime == "text/plain" and parsed.title == "latin1"
    for text, encoding in (
        ("Grüße aus München! Die Straße ist schön.", "latin-1"),
        ("Привет, как дела? Это тест кодировки.", "cp1251"),
    ):
        assert decode_text(text.encode(encoding), "x") == text


def test_markdown_and_email(tmp_path: Path) -> None:
    md = tmp_path / "notes.md"
    md.write_text(
        "# Project Notes\n\nStarted in 2020.\n\n## Team\n\nAlice leads it.\n\n| Name | Role |\n|---|---|\n| Alice | Lead |\n"
    )
    parsed = parse_file(md, max_bytes=MAX)
    _, sections, chunks = build_structure(parsed)
    assert parsed.title == "Project Notes" and [s.path for s in sections] == ["Project Notes", "Project Notes > Team"]
    assert [c.kind for c in chunks] == ["text", "text", "table"] and "| Alice | Lead |" in chunks[2].text
    eml = tmp_path / "mail.eml"
    eml.write_bytes(
        b"From: Alice <alice@example.com>\r\nTo: Bob <bob@example.com>\r\nSubject: Quarterly numbers\r\n"
        b"Date: Mon, 2 Jan 2023 10:00:00 +0000\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
        b"Hi Bob,\r\n\r\nRevenue grew 12% in Q4. The board meets on Friday.\r\n\r\nAlice\r\n"
    )
    parsed = parse_file(eml, max_bytes=MAX)
    assert parsed.title == "Quarterly numbers" and not any(e.kind == "heading" for e in parsed.elements)
    text = " ".join(e.text for e in parsed.elements)
    assert "From: Alice <alice@example.com>" in text and "Revenue grew 12% in Q4." in text


# --- passages and ids -----------------------------------------------------------------------------------


def test_passage_corpus(examples_dir: Path, tmp_path: Path) -> None:
    src = examples_dir / "multihop" / "musique" / "hipporag_train100.corpus.jsonl"
    lines = src.read_text(encoding="utf-8").splitlines()[:50]
    corpus = tmp_path / "musique50.jsonl"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    parsed = list(parse_passages_jsonl(corpus))
    assert len(parsed) == 50
    for line, doc in zip(lines, parsed):
        obj = json.loads(line)
        assert doc.title == obj["title"] and doc.title
        assert doc.uri == f"{corpus.resolve().as_uri()}#{obj['id']}"
        document, sections, chunks = build_structure(doc)
        assert document.id == stable_id("doc", doc.uri) and document.title == obj["title"]
        assert sections == [] and chunks
        assert all(c.parent_id == document.id and c.section_path == "" for c in chunks)
    assert len({d.uri for d in parsed}) == 50 and len({d.sha256 for d in parsed}) == 50


def test_ids_are_stable_across_runs(docs: Path, examples_dir: Path, tmp_path: Path) -> None:
    def ids(doc: ParsedDocument) -> list[str]:
        document, sections, chunks = build_structure(doc)
        return [document.id] + [s.id for s in sections] + [c.id for c in chunks] + [c.parent_id for c in chunks]

    for path in (docs / "pdf" / "us_federal_register_2020-17221.pdf", docs / "html" / "wikipedia_duck.html"):
        first = ids(parse_file(path, max_bytes=MAX))
        second = ids(parse_file(path, max_bytes=MAX))
        assert first == second and len(set(first)) > 10
    src = examples_dir / "multihop" / "musique" / "hipporag_train100.corpus.jsonl"
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(src.read_text(encoding="utf-8").splitlines()[:20]) + "\n", encoding="utf-8")
    run1 = [i for d in parse_passages_jsonl(corpus) for i in ids(d)]
    run2 = [i for d in parse_passages_jsonl(corpus) for i in ids(d)]
    assert run1 == run2


def test_every_passage_of_a_corpus_is_a_document_of_its_own_chunks(examples_dir: Path) -> None:
    """3,301 2WikiMultihopQA passages: each one document, each of at least one chunk of its own. How fast they parse
    and chunk is benchmarks/ingest.py's to measure (docs/benchmarks.md), not a test's."""
    corpus = examples_dir / "multihop" / "2wikimultihopqa" / "dev500.corpus.jsonl"
    parsed = list(parse_passages_jsonl(corpus))
    built = [build_structure(d) for d in parsed]
    assert len(parsed) == 3301 == len({document.id for document, _, _ in built})
    assert all(chunks and {c.document_id for c in chunks} == {document.id} for document, _, chunks in built)
