"""OCR through Tesseract (issue 31): real scans made here. A page of text is rendered with PyMuPDF to an image,
put alone into a PDF (no text layer) or saved as a PNG, and read back through the parsers.

Tesseract is a system package (`.ci/run` installs tesseract-ocr, -eng, -osd): under CI a missing one fails,
elsewhere these tests are skipped.
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kbgraph.errors import IngestError
from kbgraph.ingest.ocr import OcrOptions
from kbgraph.ingest.parse import ParsedDocument, parse_file, skip_reason
from kbgraph.settings import Settings

if TYPE_CHECKING:
    from PIL import Image

MAX = 50_000_000
TEXT = [
    "Harbour report",
    "",
    "The ferry to Basel leaves the harbour every morning at nine o'clock.",
    "Passengers buy their tickets at the kiosk beside the old crane.",
]
ROWS = [
    ["City", "Population", "Country"],
    ["Basel", "173000", "Switzerland"],
    ["Lyon", "522000", "France"],
    ["Porto", "232000", "Portugal"],
]


@pytest.fixture(autouse=True)
def _tesseract() -> None:
    if not shutil.which("tesseract"):
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(
                "Tesseract is not installed; .ci/run installs tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd"
            )
        pytest.skip("Tesseract not installed")


def page_image(lines: list[str] | None = None, *, table: bool = False, rotate: int = 0, dpi: int = 200) -> Image.Image:
    """A PIL image of an A4 page of ``lines`` (or of a small table without rulings), rendered by PyMuPDF;
    turned ``rotate`` degrees counter-clockwise."""
    import pymupdf
    from PIL import Image

    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    if table:
        for r, row in enumerate(ROWS):
            for c, cell in enumerate(row):
                page.insert_text((78 + c * 150, 119 + r * 28), cell, fontsize=14)
        page.draw_line((72, 126), (522, 126))  # a rule under the header
    else:
        page.insert_textbox(pymupdf.Rect(72, 72, 523, 770), "\n".join(lines or TEXT), fontsize=13)
    pix = page.get_pixmap(dpi=dpi)
    img = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    return img.rotate(rotate, expand=True) if rotate else img


def scanned_pdf(path: Path, images: Iterable[Image.Image], dpi: int = 200, text_page: str | None = None) -> Path:
    """A PDF whose pages are ``images`` alone (no text layer), plus a page with a real text layer first when
    ``text_page`` is given."""
    import pymupdf

    doc = pymupdf.open()
    if text_page:
        doc.new_page(width=595, height=842).insert_text((72, 100), text_page, fontsize=12)
    for img in images:
        buf = io.BytesIO()
        img.save(buf, "PNG")
        page = doc.new_page(width=img.width * 72 / dpi, height=img.height * 72 / dpi)
        page.insert_image(page.rect, stream=buf.getvalue())
    doc.save(path)
    return path


def _text(doc: ParsedDocument) -> str:
    return "\n".join(e.text for e in doc.elements)


def test_scanned_pdf_is_read_by_ocr_page_by_page(tmp_path: Path) -> None:
    """A half-scanned PDF: the page with text keeps its text layer (never OCR'd), the scanned one is OCR'd;
    the document says which pages OCR read."""
    path = scanned_pdf(tmp_path / "scan.pdf", [page_image()], text_page="The text layer says the lock opens at six.")
    doc = parse_file(path, max_bytes=MAX, ocr=OcrOptions())
    text = _text(doc)
    assert "The text layer says the lock opens at six." in text
    assert "The ferry to Basel leaves the harbour every morning at nine o'clock." in text, text
    assert "kiosk beside the old crane" in text
    assert doc.ocr_pages == [2], doc.ocr_pages
    assert any(w.startswith("read by OCR: page 2") for w in doc.warnings), doc.warnings
    assert [e.page for e in doc.elements if "ferry" in e.text] == [2]


def test_rotated_scan_is_turned_upright(tmp_path: Path) -> None:
    path = scanned_pdf(tmp_path / "sideways.pdf", [page_image(rotate=90)])
    doc = parse_file(path, max_bytes=MAX, ocr=OcrOptions())
    assert "The ferry to Basel leaves the harbour every morning at nine o'clock." in _text(doc), _text(doc)
    assert doc.ocr_pages == [1]


def test_rotated_scan_keeps_every_line(tmp_path: Path) -> None:
    """A full portrait page scanned sideways: its lines near the bottom are read too (PyMuPDF's own full-page
    OCR mapped the words back to the unrotated page and clipped them to the rotated one, losing every line
    below the landscape page's height: here lines 27 to 29)."""
    lines = ["Tide table for the outer harbour", ""] + [
        f"Entry {i} says the tide turns at berth {i}." for i in range(2, 30)
    ]
    path = scanned_pdf(tmp_path / "sideways.pdf", [page_image(lines, rotate=90, dpi=150)], dpi=150)
    text = _text(parse_file(path, max_bytes=MAX, ocr=OcrOptions(dpi=150)))
    for i in (2, 15, 29):
        assert f"Entry {i} says the tide turns at berth {i}." in text, text


def test_png_image_file_is_read_with_its_confidence(tmp_path: Path) -> None:
    path = tmp_path / "notice.png"
    page_image(rotate=270).save(path)
    assert skip_reason(path, OcrOptions()) is None
    doc = parse_file(path, max_bytes=MAX, ocr=OcrOptions())
    assert doc.mime == "image/png" and doc.ocr_pages == [1]
    assert "The ferry to Basel leaves the harbour every morning at nine o'clock." in _text(doc), _text(doc)
    assert doc.ocr_confidence[1] > 80, doc.ocr_confidence


def test_table_image_comes_out_as_rows(tmp_path: Path) -> None:
    path = tmp_path / "cities.jpg"
    page_image(table=True).save(path, quality=90)
    doc = parse_file(path, max_bytes=MAX, ocr=OcrOptions())
    texts = [e.text for e in doc.elements]
    for row in ROWS:
        assert " ".join(row) in texts, texts


def test_ocr_off_or_missing_keeps_the_skip_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "notice.png"
    page_image().save(path)
    scan = scanned_pdf(tmp_path / "scan.pdf", [page_image()])
    off = OcrOptions(mode="off")
    assert "OCR is off (setting ocr=off)" in skip_reason(path, off)  # type: ignore[operator]
    with pytest.raises(IngestError, match=r"a scanned PDF needs OCR first: OCR is off"):
        parse_file(scan, max_bytes=MAX, ocr=off)
    with monkeypatch.context() as m:  # no tesseract on PATH
        m.setenv("PATH", str(tmp_path / "no-bin"))
        reason = skip_reason(path, OcrOptions())
        assert reason.startswith("image: no OCR configured") and "apt-get install tesseract-ocr" in reason, reason  # type: ignore[operator, union-attr]
        with pytest.raises(
            IngestError,
            match=r"scan\.pdf \(a scanned PDF needs OCR first: no OCR configured.*"
            r"apt-get install tesseract-ocr",
        ):
            parse_file(scan, max_bytes=MAX)
    with pytest.raises(IngestError, match=r"Tesseract has no language data for xyz.*apt-get install tesseract-ocr-xyz"):
        parse_file(path, max_bytes=MAX, ocr=OcrOptions(languages="eng+xyz"))
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x01" * 100)
    with pytest.raises(IngestError, match=r"corrupt or unreadable image broken\.png"):
        parse_file(tmp_path / "broken.png", max_bytes=MAX, ocr=OcrOptions())


# --- end to end: a folder of scans, ingested and asked offline ----------------------------------------------
#: file -> (its one sentence, a question only that sentence answers, the words the answer must quote)
SCANS = {
    "scanned.pdf": (
        "The lighthouse keeper on Skerry Island paints the lamp room blue every April.",
        "What colour does the lighthouse keeper on Skerry Island paint the lamp room?",
        "lamp room blue",
    ),
    "sideways.pdf": (
        "The bakery in Hammerfest sells cardamom buns to the fishermen before dawn.",
        "What does the bakery in Hammerfest sell to the fishermen?",
        "cardamom buns",
    ),
    "poster.png": (
        "The orchestra in Leipzig rehearses the cello concerto on Thursday evenings.",
        "When does the orchestra in Leipzig rehearse the cello concerto?",
        "Thursday evenings",
    ),
    "photo.jpg": (
        "The glacier above Zermatt retreated forty metres during the hot summer.",
        "How far did the glacier above Zermatt retreat during the hot summer?",
        "forty metres",
    ),
}


def scans_folder(folder: Path) -> Path:
    """``SCANS`` made for real: an image-only PDF, the same turned 90 degrees, a PNG and a JPEG, each a small
    page (a third of A4, 150 dpi: quick to OCR) holding its sentence; plus a text file, so that the store
    holds a document whatever OCR does."""
    import pymupdf
    from PIL import Image

    folder.mkdir()
    for name, (sentence, _, _) in SCANS.items():
        doc = pymupdf.open()
        page = doc.new_page(width=595, height=280)
        page.insert_textbox(pymupdf.Rect(48, 48, 547, 250), sentence, fontsize=14)
        pix = page.get_pixmap(dpi=150)
        img = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
        if name.endswith(".pdf"):
            scanned_pdf(folder / name, [img.rotate(90, expand=True) if name == "sideways.pdf" else img], dpi=150)
        else:
            img.save(folder / name, quality=90)
    (folder / "harbour.txt").write_text(
        "The harbour office opens at eight and closes at noon on Saturdays.\n", encoding="utf-8"
    )
    return folder


@pytest.mark.slow  # ~20-30 s on 2 busy cores: 4 OCR'd pages, 2 ingests and 8 questions
def test_folder_of_scans_is_ingested_and_asked_offline(falkor_settings: Settings, tmp_path: Path) -> None:
    """Issue 31's "done when": a folder holding a scanned PDF, a rotated scan, a PNG and a JPEG of text is
    ingested into the embedded FalkorDB store; each sentence is found by ``ask`` without an LLM, its answer
    quoting it and citing the right file first; the report lists each as read by OCR. The same folder with
    ``ocr=off``: the scans are not documents (images skipped, PDFs failed naming OCR) and no answer cites them."""
    from kbgraph.kb import KnowledgeBase

    folder = scans_folder(tmp_path / "scans")
    settings = falkor_settings.updated({"name": "ocr_e2e", "ocr_dpi": 200})
    kb = KnowledgeBase(settings=settings)
    try:
        kb.reset()
        report = kb.ingest([folder], progress=False)
        outcomes = {Path(f.path).name: f for f in report.files}
        assert report.failed == 0 and report.added == 5, report.model_dump_json(indent=1)
        for name in SCANS:
            assert outcomes[name].outcome == "ingested", outcomes[name]
            assert any(w.startswith("read by OCR: page 1") for w in outcomes[name].warnings), outcomes[name]
        assert not any("OCR" in w for w in outcomes["harbour.txt"].warnings)
        for name in [*SCANS, "harbour.txt"]:  # the store says so too: Document.ocr, its pages, the confidence
            (row,) = kb.browse("document", document=Path(name).stem)
            scan = name in SCANS
            assert row["document"]["ocr"] is scan and (row["document"]["ocr_pages"] or []) == ([1] if scan else [])
            image = name.endswith((".png", ".jpg"))  # (Tesseract's confidence of an image file's words)
            assert (row["chunk"].get("ocr_confidence") or 0) > (50 if image else -1), (name, row["chunk"])
        for name, (_, question, words) in SCANS.items():
            answer = kb.ask(question)
            assert answer.retrieval_only and answer.citations, answer
            top = answer.citations[0]
            assert Path(top.document_uri).name == name, (question, [c.document_uri for c in answer.citations])
            assert words in answer.answer, (question, answer.answer)
    finally:
        kb.close()

    off = KnowledgeBase(settings=settings.updated({"name": "ocr_e2e_off", "ocr": "off"}))
    try:
        off.reset()
        report = off.ingest([folder], progress=False)
        outcomes = {Path(f.path).name: f for f in report.files}
        assert report.added == 1 and outcomes["harbour.txt"].outcome == "ingested"
        for name in SCANS:
            want = "failed" if name.endswith(".pdf") else "skipped"
            assert outcomes[name].outcome == want and "OCR is off" in outcomes[name].reason, outcomes[name]  # type: ignore[operator]
        for _, question, words in SCANS.values():
            answer = off.ask(question)
            assert all(Path(c.document_uri).name == "harbour.txt" for c in answer.citations), answer.citations
            assert words not in answer.answer
    finally:
        off.close()
