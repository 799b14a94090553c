"""PDF -> elements with PyMuPDF (PIKE-RAG §5.1.1: text, headings and tables of a paged document).

What it does, page by page:

- **Tables** (``kbgraph.ingest.pdf_tables``): ruling-line detection, the cell text rebuilt from the page's
  words; caption, composed header rows and notes; a header-less table continuing one of the previous page
  reuses its header.
- **Text direction** (``kbgraph.ingest.pdf_layout.upright_rotation``): a page with a text layer is read turned
  (in memory) to the rotation under which most of its text reads left to right, so that a page whose text runs
  sideways or upside down on screen (text written on a portrait page then turned by ``/Rotate``, a landscape
  table typeset sideways) is read, in reading order, like an upright one; a page already upright is unchanged.
- **Text** (``kbgraph.ingest.pdf_layout``): MuPDF's blocks and lines; vertical text, repeated page
  headers/footers (same text, digits ignored, in the top or bottom 10% of at least half the pages) and
  number-only blocks (page and line numbers) are dropped; line-end hyphenation before a lower-case letter
  is undone.
- **Headings**: from span statistics. The body style is the font size covering the most characters; a
  block of at most three lines whose every line is larger (>= body + 1 pt) or bold at body size (when the
  body is not bold) is a heading; a block that starts with such lines and continues as body text is split.
  Heading levels rank the heading styles in use (larger first, bold before regular at one size).
- **Reading order** (``kbgraph.ingest.pdf_layout``): per page, items are cut into horizontal bands at
  full-width items; inside a band, narrow items are grouped into columns by horizontal overlap and read
  column by column, top to bottom.
- A paragraph broken by a page break (no final punctuation, next page starts lower-case) is re-joined.
- **Scanned pages** (no text, an image): read by OCR when it is on (``kbgraph.ingest.ocr``: Tesseract through
  PyMuPDF's OCR of the rendered page, the page turned upright first), then laid out like any other page. A page
  with text is never OCR'd.
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Literal, NotRequired, TypedDict

from kbgraph.errors import IngestError
from kbgraph.ingest.bounds_pdf import check_pdf
from kbgraph.ingest.parse_common import RawElement, describe
from kbgraph.ingest.pdf_layout import Item, Line, in_margin, inside, join_lines, line_from, norm_key, reading_order
from kbgraph.ingest.pdf_layout import PdfTable, TextDict, upright_rotation
from kbgraph.ingest.pdf_tables import extract_table, may_have_table
from kbgraph.ingest.tables import rows_to_markdown
from kbgraph.text import one_line
from kbgraph.ingest import ocr
from kbgraph.ingest.properties import pdf_properties

if TYPE_CHECKING:
    from pymupdf import Document, Page, Rect, TextPage

log = logging.getLogger(__name__)

os.environ.setdefault("PYMUPDF_SUGGEST_LAYOUT_ANALYZER", "0")

_WS = re.compile(r"\s+")
_NUMBER_ONLY = re.compile(r"^[\W_]*(page\s*)?\d{1,5}(\s*(of|/)\s*\d{1,5})?[\W_]*$", re.I)
#: Metadata titles that are file names or placeholders, not titles.
_JUNK_TITLE = re.compile(r"(\.(exe|docx?|pdf|tmp|indd|qxd|qxp|rtf|txt|xlsx?|pptx?|dvi|ps|tex)$)|^untitled\b", re.I)
MAX_HEADING_LINES = 3
MAX_HEADING_CHARS = 200


class _PageElement(TypedDict):
    """An element of a page in reading order, before heading levels and page-break joins: a heading with its
    style (size, bold), a text block, or a table."""

    kind: Literal["heading", "text", "table"]
    page: int
    text: NotRequired[str]
    style: NotRequired[tuple[float, bool]]
    table: NotRequired[PdfTable]


def open_pdf(data: bytes, name: str) -> Document:
    """Open PDF bytes with pymupdf; IngestError for anything that is not a readable, unlocked PDF."""
    import pymupdf

    pymupdf.TOOLS.mupdf_display_errors(False)  # MuPDF's own stderr chatter; failures raise below
    pymupdf.TOOLS.mupdf_display_warnings(False)
    if b"%PDF-" not in data[:1024]:
        raise IngestError(f"corrupt or unreadable PDF {name}: no %PDF header (not a PDF file)")
    if b"%%EOF" not in data[-2048:]:
        # MuPDF would 'repair' a truncated file and quietly return whatever pages it still finds.
        raise IngestError(f"truncated or corrupt PDF {name}: no %%EOF marker at the end (copy or download it again)")
    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:  # FileDataError, RuntimeError, ValueError…
        raise IngestError(f"corrupt or unreadable PDF {name}: {one_line(exc, 200, empty='unknown error')}") from exc
    if doc.needs_pass and not doc.authenticate(""):
        doc.close()
        raise IngestError(f"password-protected PDF {name}: remove the password (or decrypt it) and ingest it again")
    if doc.page_count == 0:
        doc.close()
        raise IngestError(f"corrupt PDF {name}: no pages could be read")
    return doc


def parse_pdf(data: bytes, name: str) -> tuple[str | None, list[RawElement]]:
    """(title or None, elements as dicts {kind, text, level, page, markdown}) of a PDF."""
    import pymupdf

    doc = open_pdf(data, name)
    try:
        check_pdf(doc, name)  # pages and decoded streams within the bounds (kbgraph.ingest.bounds)
        return _parse(doc, name, pymupdf)
    finally:
        doc.close()


def _parse(doc: Document, name: str, pymupdf: ModuleType) -> tuple[str | None, list[RawElement]]:
    pages, bad_pages = _read_pages(doc, name, pymupdf)
    raw = _page_elements(pages, _repeated(pages), _heading_style(pages))
    elements = _elements(raw)
    describe(properties=pdf_properties(doc.metadata))  # author, creationDate, modDate (kbgraph.ingest.metadata)
    title = _title(doc, elements, raw)
    if bad_pages:
        log.warning("%s: %d of %d pages could not be read", name, bad_pages, doc.page_count)
    return (title or None), elements


def _read_pages(doc: Document, name: str, pymupdf: ModuleType) -> tuple[list[tuple[int, Rect, list[Item]]], int]:
    """([(page number, its rect, its items)], pages that could not be read) of ``doc``. Raises IngestError when
    no page could be read or OCR cannot run at all."""
    flags: int = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
    pages: list[tuple[int, Rect, list[Item]]] = []
    bad_pages = 0
    for page in doc:  # type: ignore[attr-defined]  # (pymupdf: iterable through __getitem__, which mypy does not follow)
        try:
            items = _page_items(page, flags)  # (first: OCR may turn a sideways scan upright, changing its rect)
            pages.append((page.number + 1, page.rect, items))
        except IngestError:  # OCR cannot run at all (a language missing): the fix is the user's
            raise
        except Exception as exc:  # one broken page must not lose the document
            bad_pages += 1
            log.warning("%s: page %d skipped: %s", name, page.number + 1, one_line(exc, 200, empty="unknown error"))
    if not pages:
        raise IngestError(f"corrupt PDF {name}: no page could be read")
    return pages, bad_pages


def _repeated(pages: list[tuple[int, Rect, list[Item]]]) -> set[str]:
    """Running headers/footers: the same text (digits ignored) in the margins of at least half the pages."""
    if len(pages) < 2:
        return set()
    seen: Counter[str] = Counter()
    for _, rect, items in pages:
        keys = {norm_key(" ".join(ln.text for ln in it.lines)) for it in items if in_margin(it, rect)}
        seen.update(keys)
    return {k for k, n in seen.items() if n >= max(2, len(pages) / 2)}


def _heading_style(pages: list[tuple[int, Rect, list[Item]]]) -> Callable[[Line], tuple[float, bool] | None]:
    """The heading style of a line (size, bold), None for body text: the body style and heading styles from span
    statistics (the body size covers the most characters)."""
    sizes: Counter[float] = Counter()
    bold_chars = 0
    total_chars = 0
    for _, _, items in pages:
        for it in items:
            for ln in it.lines:
                sizes[round(ln.size * 2) / 2] += ln.chars
                total_chars += ln.chars
                bold_chars += ln.chars if ln.bold else 0
    body_size = sizes.most_common(1)[0][0] if sizes else 10.0
    body_bold = total_chars > 0 and bold_chars > total_chars / 2

    def heading_style(ln: Line) -> tuple[float, bool] | None:
        size = round(ln.size * 2) / 2
        if size >= body_size + 1.0:
            return (size, ln.bold)
        if ln.bold and not body_bold and size >= body_size - 0.5:
            return (size, True)
        return None

    return heading_style


def _page_elements(
    pages: list[tuple[int, Rect, list[Item]]],
    repeated: set[str],
    heading_style: Callable[[Line], tuple[float, bool] | None],
) -> list[_PageElement]:
    """The elements of every page in reading order: tables (with their notes as text) and text blocks, a block
    that starts with heading lines split into its heading and the rest; running headers/footers (``repeated``)
    and number-only blocks left out."""
    raw: list[_PageElement] = []
    for pno, rect, items in pages:
        for it in reading_order(items):
            if it.table is not None:
                raw.append({"kind": "table", "page": pno, "table": it.table})
                for note in it.table["notes"]:
                    raw.append({"kind": "text", "page": pno, "text": note})
                continue
            text_all = " ".join(ln.text for ln in it.lines)
            if in_margin(it, rect) and norm_key(text_all) in repeated:
                continue
            if _NUMBER_ONLY.match(text_all.strip()):
                continue
            styles = [heading_style(ln) for ln in it.lines]
            n_head = 0
            while n_head < len(styles) and styles[n_head] is not None and styles[n_head] == styles[0]:
                n_head += 1
            head_text = join_lines([ln.text for ln in it.lines[:n_head]])
            if (
                0 < n_head <= MAX_HEADING_LINES
                and (head_style := styles[0]) is not None  # (it is, with n_head > 0)
                and len(head_text) <= MAX_HEADING_CHARS
                and sum(ch.isalpha() for ch in head_text) >= 2
            ):
                raw.append({"kind": "heading", "page": pno, "text": head_text, "style": head_style})
                rest = it.lines[n_head:]
            else:
                rest = it.lines
            body = join_lines([ln.text for ln in rest])
            if body:
                raw.append({"kind": "text", "page": pno, "text": body})
    return raw


def _elements(raw: list[_PageElement]) -> list[RawElement]:
    """The document's elements: heading levels ranking the styles in use (larger first, bold before regular at one
    size), a header-less table continuing one of the previous page given its header, a paragraph broken by a page
    break re-joined."""
    styles_used = sorted({r["style"] for r in raw if r["kind"] == "heading"}, key=lambda s: (-s[0], not s[1]))
    level_of = {s: min(i + 1, 6) for i, s in enumerate(styles_used)}
    elements: list[RawElement] = []
    last_table: tuple[int, int, list[str]] | None = None  # (page, ncols, header) of the previous table
    for r in raw:
        if r["kind"] == "table":
            t = r["table"]
            header = t["header"]
            if (
                header is None
                and last_table is not None
                and last_table[1] == t["ncols"]
                and last_table[0] in (r["page"], r["page"] - 1)
            ):
                header = last_table[2]  # the same table, continued on the next page
            if header is not None:
                last_table = (r["page"], t["ncols"], header)
            md = rows_to_markdown(header or [""] * t["ncols"], t["rows"], t["caption"])
            elements.append({"kind": "table", "text": md, "markdown": md, "page": r["page"], "level": None})
            continue
        last = elements[-1] if elements else None
        if r["kind"] == "heading":
            elements.append({"kind": "heading", "text": r["text"], "level": level_of[r["style"]], "page": r["page"]})
            last_table = None  # a new section: a header-less table there is not a continuation
            continue
        text = r["text"]
        # Re-join a paragraph broken by a page break.
        if (
            last is not None
            and last["kind"] == "text"
            and last["page"] == r["page"] - 1
            and (
                (not re.search(r"[.!?:;\"”)\]]$", last["text"]) and text[:1].islower())
                or re.search(r"\w[-–]$", last["text"])
            )
        ):
            last["text"] = join_lines([last["text"], text])
            continue
        elements.append({"kind": "text", "text": text, "level": None, "page": r["page"]})
    return elements


def _title(doc: Document, elements: list[RawElement], raw: list[_PageElement]) -> str:
    """The PDF's title: its metadata's, unless a file name or placeholder; else, in a document without headings,
    the caption of a table of its first page; else ''."""
    title = (doc.metadata or {}).get("title") or ""
    title = _WS.sub(" ", title).strip()
    title = re.sub(r"^microsoft (word|powerpoint) - ", "", title, flags=re.I)
    if not title or _JUNK_TITLE.search(title) or len(title) > 300:
        title = ""
    if not title and not any(e["kind"] == "heading" for e in elements):  # a one-table report: its caption
        cap = next((r["table"]["caption"] for r in raw if r["kind"] == "table" and r["page"] == 1), None)
        title = cap or ""
    return title


def _page_items(page: Page, flags: int) -> list[Item]:
    items: list[Item] = []
    tables: list[PdfTable] = []
    rects: list[tuple[float, ...]] = []
    d: TextDict = page.get_text("dict", flags=flags)
    textpage: TextPage | None = None
    if (options := ocr.current()).enabled and ocr.needs_ocr(page, d.get("blocks", [])):
        textpage = ocr.pdf_page_textpage(page, options)  # (turns a sideways scan upright)
        if textpage is None:
            return items
        d = page.get_text("dict", flags=flags, textpage=textpage)
    elif (turn := upright_rotation(d.get("blocks", []), page.rotation)) is not None and turn != page.rotation % 360:
        # Most of the text runs sideways or upside down on screen: read the page turned so that it reads left to
        # right (the in-memory document only; the text dict is in unrotated coordinates, so it stays valid).
        log.debug("page %d: text reads upright at /Rotate %d (not %d)", page.number + 1, turn, page.rotation)
        page.set_rotation(turn)
    try:
        scan = textpage is not None  # (ruling lines of a scan are pixels: no table found)
        candidates = list(page.find_tables(use_layout=False).tables) if not scan and may_have_table(page) else []
    except Exception as exc:  # table detection is best effort; the text is still read
        log.warning("page %d: table detection failed: %s", page.number + 1, one_line(exc, 200, empty="unknown error"))
        candidates = []
    # MuPDF reports a page's text in unrotated coordinates; OCR's words are in display ones already
    rot = page.rotation_matrix if page.rotation % 360 and textpage is None else None
    if candidates:
        words = page.get_text("words", flags=flags)
        if rot is not None:  # tables come in display coordinates, words in unrotated ones
            import pymupdf

            words = [tuple(pymupdf.Rect(w[:4]) * rot) + tuple(w[4:]) for w in words]
        for tb in candidates:
            t = extract_table(tb, words)
            if t is None or (len(t["rows"]) + (1 if t["header"] else 0)) < 2:
                continue
            tables.append(t)
            rects.append(tuple(tb.bbox))
            items.append(Item(bbox=tuple(tb.bbox), table=t))
    for b in d.get("blocks", []):
        if b.get("type") != 0:
            continue
        lines = []
        for raw in b.get("lines", []):
            ln = line_from(raw, rot)
            if ln is None or any(inside(ln.bbox, r) for r in rects):
                continue
            lines.append(ln)
        if lines:
            x0 = min(ln.bbox[0] for ln in lines)
            y0 = min(ln.bbox[1] for ln in lines)
            x1 = max(ln.bbox[2] for ln in lines)
            y1 = max(ln.bbox[3] for ln in lines)
            items.append(Item(bbox=(x0, y0, x1, y1), lines=lines))
    return items


__all__ = ["open_pdf", "parse_pdf"]
