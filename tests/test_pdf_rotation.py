"""Rotated PDF pages with a text layer (issue 38): a page whose text layer reads is never refused.

The PDFs are made here with PyMuPDF, an A4 page turned 90 or 270 degrees (``/Rotate``, ``page.set_rotation``)
carrying a real text layer, in the two forms such pages come in:

- **sideways**: the text written on the unturned page, then the page turned (a portrait page turned in a
  viewer and saved, a scanner's text layer under a wrong ``/Rotate``); on screen the text runs top to bottom;
- **upright**: the text written turned (``insert_text(rotate=)``) so that it reads upright on the turned
  page, as a printer driver writes a landscape page.

No OCR is involved (Tesseract need not be installed): the text layer is what is read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kbgraph.ingest.ocr import OcrOptions
from kbgraph.ingest.parse import parse_file

from kbgraph.settings import Settings

MAX = 50_000_000

#: file -> (its three lines, a question on the first, words of the answer)
PAGES: dict[str, tuple[list[str], str, str]] = {
    "sideways90.pdf": (
        [
            "The ferry to Sark leaves the stone quay at seven every morning.",
            "Second line: the return crossing waits for the evening tide.",
            "Rotated page fixture, turned ninety degrees.",
        ],
        "When does the ferry to Sark leave the stone quay?",
        "seven every morning",
    ),
    "sideways270.pdf": (
        [
            "The bakery in Tromso sells rye bread to the whalers on Fridays.",
            "Second line: the whalers pay for it with smoked salmon.",
            "Rotated page fixture, turned two hundred seventy degrees.",
        ],
        "What does the bakery in Tromso sell to the whalers?",
        "rye bread",
    ),
    "upright90.pdf": (
        [
            "The observatory on Pic du Midi measures the ozone above the Pyrenees.",
            "Second line: its telescope dome opens only on clear nights.",
            "Landscape page fixture, printed at ninety degrees.",
        ],
        "What does the observatory on Pic du Midi measure?",
        "ozone above the Pyrenees",
    ),
    "upright270.pdf": (
        [
            "The lock keeper at Pontcysyllte opens the sluice gates at dawn.",
            "Second line: narrowboats cross the aqueduct one at a time.",
            "Landscape page fixture, printed at two hundred seventy degrees.",
        ],
        "When does the lock keeper at Pontcysyllte open the sluice gates?",
        "at dawn",
    ),
}


def rotated_pdf(path: Path, lines: list[str], rotation: int, *, upright: bool) -> Path:
    """A one-page A4 PDF turned ``rotation`` degrees holding ``lines``: written on the unturned page (text
    sideways on screen) or, ``upright``, written turned so that it reads upright on the turned page."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    if upright:
        page.set_rotation(rotation)
        for i, line in enumerate(lines):  # the display position of each line, in the page's own coordinates
            page.insert_text(
                pymupdf.Point(72, 100 + 24 * i) * page.derotation_matrix, line, fontsize=12, rotate=rotation
            )
    else:
        for i, line in enumerate(lines):
            page.insert_text((56, 100 + 24 * i), line, fontsize=12)
        page.set_rotation(rotation)
    doc.save(path)
    assert pymupdf.open(path)[0].get_text().split("\n")[:3] == lines  # the text layer reads
    return path


def _make(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    for name, (lines, _, _) in PAGES.items():
        rotated_pdf(folder / name, lines, 270 if "270" in name else 90, upright=name.startswith("upright"))
    return folder


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
@pytest.mark.parametrize("upright", [False, True], ids=["sideways", "upright"])
def test_rotated_page_with_a_text_layer_is_read_in_order(tmp_path: Path, rotation: int, upright: bool) -> None:
    """Each line of the text layer comes out once, in reading order, whatever the page's rotation and whether
    its text reads upright or sideways on screen (0 degrees: the unturned page, as before)."""
    lines = PAGES["sideways90.pdf"][0]
    path = rotated_pdf(tmp_path / "page.pdf", lines, rotation, upright=upright)
    doc = parse_file(path, max_bytes=MAX, ocr=OcrOptions(mode="off"))
    text = "\n".join(e.text for e in doc.elements)
    positions = [text.find(line) for line in lines]
    assert -1 not in positions and positions == sorted(positions), text
    assert all(e.page == 1 for e in doc.elements)


def test_rotated_pdfs_are_ingested_and_asked_on_the_cli(falkor_settings: Settings, tmp_path: Path) -> None:
    """Issue 38: the four rotated PDFs are ingested into the embedded FalkorDB store by ``kbgraph ingest`` (none
    failed for "no extractable text"); ``kbgraph ask`` (no LLM) answers each page's question from it, citing that
    file first, and the cited chunk holds the page's lines in reading order."""
    from typer.testing import CliRunner

    from kbgraph.cli import app

    settings = falkor_settings.updated({"name": "pdf_rotation"})
    folder = _make(tmp_path / "rotated")
    # (offline, and no kbgraph.toml of the working directory: the answer is the retrieval-only one)
    env = {
        "KBGRAPH_HOME": str(settings.home),
        "KBGRAPH_NAME": settings.name,
        "KBGRAPH_OCR": "off",
        "KBGRAPH_DATA_DIR": str(settings.kb_dir),
        "KBGRAPH_FALKOR_IDLE_TIMEOUT": "0",
        "KBGRAPH_EMBEDDING_CACHE_DIR": str(settings.embedding.embedding_cache_dir),
        "KBGRAPH_CONFIG": str(tmp_path / "no-kbgraph.toml"),
        "KBGRAPH_LLM_MODEL": "",
    }
    runner = CliRunner()
    assert runner.invoke(app, ["reset", "--yes"], env=env).exit_code == 0
    run = runner.invoke(app, ["ingest", "--json", str(folder)], env=env)
    assert run.exit_code == 0, run.output
    report = json.loads(run.stdout)
    outcomes = {Path(f["path"]).name: (f["outcome"], f["reason"]) for f in report["files"]}
    assert outcomes == {name: ("ingested", None) for name in PAGES}, outcomes

    from kbgraph.kb import KnowledgeBase

    for name, (lines, question, words) in PAGES.items():
        run = runner.invoke(app, ["ask", "--json", question], env=env)
        assert run.exit_code == 0, run.output
        answer = json.loads(run.stdout)
        assert answer["citations"], answer
        top = answer["citations"][0]
        assert Path(top["document_uri"]).name == name, (question, [c["document_uri"] for c in answer["citations"]])
        assert top["page"] == 1 and words in answer["answer"], (question, answer["answer"])
        with KnowledgeBase(settings=settings) as kb:
            chunk = kb.chunk(top["chunk_id"])
        assert chunk is not None
        text = " ".join(chunk["text"].split())
        assert lines[0] in text and lines[1] in text and text.index(lines[0]) < text.index(lines[1]), text
