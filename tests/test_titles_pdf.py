"""The title chooser on real PDFs (kbgraph.ingest.titles through kbgraph.ingest.parse.parse_file, issue 56):
written with pymupdf, their metadata title a code, a file name or empty."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from kbgraph.ingest.parse import parse_file

MAX = 50_000_000


def _pdf(path: Path, *, metadata_title: str, heading: str, body: str = "Body text of the page.") -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 90), heading, fontsize=24)
    page.insert_text((72, 140), body, fontsize=10)
    for i in range(2, 4):
        doc.new_page().insert_text((72, 90), f"Page {i} has ordinary text about the subject, line {i}.", fontsize=10)
    doc.set_metadata({"title": metadata_title})
    doc.save(path)
    return path


@pytest.mark.parametrize(
    ("metadata", "expect"),
    [
        ("0001018724-18-000005", "Annual Report of the Harbour Authority 2017"),  # a code
        ("HARBOUR_2017_AR.pdf", "Annual Report of the Harbour Authority 2017"),  # a file name
        ("", "Annual Report of the Harbour Authority 2017"),  # empty
    ],
)
def test_pdf_titles(tmp_path: Path, metadata: str, expect: str) -> None:
    path = _pdf(
        tmp_path / "HARBOUR_2017_AR.pdf", metadata_title=metadata, heading="Annual Report of the Harbour Authority 2017"
    )
    doc = parse_file(path, max_bytes=MAX)
    assert doc.title == expect
    assert "HARBOUR 2017 AR" in doc.title_alternatives
    assert all("0001018724" not in t for t in [doc.title, *doc.title_alternatives])


def test_pdf_code_title_without_heading_gives_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "HARBOUR_2017_AR.pdf"
    doc = pymupdf.open()
    for i in range(3):
        doc.new_page().insert_text((72, 90), f"Plain text on page {i + 1}, all of the same size.", fontsize=10)
    doc.set_metadata({"title": "0001018724-18-000005"})
    doc.save(path)
    assert parse_file(path, max_bytes=MAX).title == "HARBOUR 2017 AR"
