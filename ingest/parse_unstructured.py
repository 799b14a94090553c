"""DOCX, PPTX, HTML and Markdown -> elements (PDF is ``parse_pdf``, e-mail ``parse_email``, spreadsheets
``parse_sheets``, other office formats ``parse_office``, plain text ``parse``).

- **DOCX**: python-docx first. A Word document's structure *is* its heading styles ('Heading 1..9', or
  any style/paragraph with an outline level), so reading them gives the same Section tree as
  ``unstructured.partition_docx`` (on the DOJ trustee handbook: the same 294 headings, same levels) in ~4 s
  instead of ~35-50 s, with body, tables and content controls in document order, the table of contents
  control skipped. A document with no heading style at all falls back to ``partition_docx``, whose
  text-classification heuristics can still find titles (if it fails, the python-docx reading is kept, without
  headings, with a warning). Pages: counted from Word's rendered page breaks when the file has them, else
  None. A table whose merged-cell grid python-docx cannot lay out (a vertical merge with nothing above, a
  non-numeric span) is read cell by cell from its XML, with a warning naming the table (``parse_common.warn``); the
  rest of the document is kept.
- **HTML, Markdown, PPTX**: ``unstructured``'s ``partition_*`` (no OCR, no model). ``Title`` ->
  heading (level = ``category_depth`` + 1), ``Table`` -> Markdown from ``text_as_html`` (HTML: from the
  page's own ``<table>``, which keeps the ``colspan`` of multi-row headers), headers, footers,
  page breaks and images dropped, everything else text. Runs of five or more list items that are nothing
  but a link (language pickers, category lists, navigation boxes) are dropped.

``unstructured`` would try to download the spaCy model ``en_core_web_sm`` on first use when no package of
that name is installed: ``scripts/install_spacy_model.sh`` installs it. ``DO_NOT_TRACK`` and the notice
switch are set before it is imported.
"""

from __future__ import annotations

import io
import logging
import os
import re
import zipfile
from typing import TYPE_CHECKING, Any

from kbgraph.errors import IngestError
from kbgraph.ingest.nlp import import_spacy
from kbgraph.ingest.metadata import split_front_matter, user_metadata
from kbgraph.ingest.parse_common import UNKNOWN_ERROR, RawElement, describe, warn
from kbgraph.ingest.properties import office_properties
from kbgraph.ingest.tables import rows_to_markdown
from kbgraph.ingest.tables_html import html_table_to_markdown, html_tables
from kbgraph.text import one_line

if TYPE_CHECKING:
    from docx.styles.style import ParagraphStyle
    from docx.table import Table
    from docx.text.paragraph import Paragraph
    from unstructured.documents.elements import Element

log = logging.getLogger(__name__)

_WS = re.compile(r"\s+")
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # encrypted OOXML and legacy .doc/.ppt are OLE files
_SKIP_TYPES = {"Header", "Footer", "PageBreak", "PageNumber", "Image", "Picture"}
LINK_FARM_MIN_RUN = 5


def quiet_unstructured() -> None:
    """Keep ``unstructured`` offline and quiet: no usage analytics, no notice (call before importing it).
    Also imports spaCy first without torch (``kbgraph.ingest.nlp.import_spacy``): unstructured imports spaCy,
    whose thinc would import torch (an HTML parse cost 0.66 GB resident and 2 s more with it)."""
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("SCARF_NO_ANALYTICS", "true")
    os.environ.setdefault("UNSTRUCTURED_DISABLE_NOTICE", "1")
    try:
        import_spacy()
    except ImportError:  # pragma: no cover - spaCy is a dependency of kbgraph[ingest]; unstructured says so
        pass


def _check_ooxml(data: bytes, name: str, kind: str) -> None:
    if data.startswith(_OLE_MAGIC):
        raise IngestError(
            f"cannot read {name}: it is password-protected or a legacy binary Office file, not a {kind} "
            f"(remove the password or save it as {kind})"
        )
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise IngestError(f"corrupt or unreadable {kind} {name}: not a ZIP/Office Open XML package")


# --- unstructured elements -> our element dicts ------------------------------------------------------


def _is_link_only(el: Element) -> bool:
    texts = getattr(el.metadata, "link_texts", None) or []
    text = _WS.sub("", el.text or "")
    linked = _WS.sub("", "".join(t or "" for t in texts))
    return bool(text) and len(linked) >= 0.9 * len(text)


def _drop_link_farms(els: list[Element]) -> list[Element]:
    """Drop runs of >= LINK_FARM_MIN_RUN consecutive list items that are only a link."""
    out: list[Element] = []
    run: list[Element] = []
    for el in els + [None]:
        if el is not None and type(el).__name__ == "ListItem" and _is_link_only(el):
            run.append(el)
            continue
        if len(run) < LINK_FARM_MIN_RUN:
            out.extend(run)
        run = []
        if el is not None:
            out.append(el)
    return out


def _original_table(el: Element, originals: list[tuple[str, str]]) -> str | None:
    """The Markdown of the page's own ``<table>`` whose cell text is the Table element's text (consumed, in
    page order), or None. ``unstructured``'s ``text_as_html`` drops ``colspan``, which a multi-row header
    needs (a 'Year ended December 31' spanning '2021 | 2020')."""
    key = _WS.sub("", el.text or "")
    for i, (k, markdown) in enumerate(originals):
        if key and k == key:
            del originals[: i + 1]
            return markdown
    return None


def from_unstructured(
    els: list[Element], *, headings: bool = True, originals: list[tuple[str, str]] | None = None
) -> list[RawElement]:
    """Our element dicts; ``originals``: (key, markdown) of the source's own tables (HTML), preferred to
    ``text_as_html`` for the Table elements they match."""
    out: list[RawElement] = []
    for el in els:
        kind = type(el).__name__
        if kind in _SKIP_TYPES:
            continue
        md = el.metadata
        page = getattr(md, "page_number", None)
        if kind == "Table":
            html = getattr(md, "text_as_html", None)
            table_md = _original_table(el, originals) if originals else None
            if table_md is None:
                table_md = html_table_to_markdown(html) if html else ""
            if table_md:
                out.append({"kind": "table", "text": table_md, "markdown": table_md, "page": page})
            elif (el.text or "").strip():
                out.append({"kind": "text", "text": el.text, "page": page})
            continue
        if kind == "Title" and headings:
            depth = getattr(md, "category_depth", None)
            out.append({"kind": "heading", "text": el.text, "level": (depth or 0) + 1, "page": page})
            continue
        if (el.text or "").strip():
            out.append({"kind": "text", "text": el.text, "page": page})
    return out


def _partition_error(kind: str, name: str, exc: Exception) -> IngestError:
    why = one_line(exc, 200, empty=UNKNOWN_ERROR)
    return IngestError(f"corrupt or unreadable {kind} {name}: {type(exc).__name__}: {why}")


# --- HTML ---------------------------------------------------------------------------------------------


def parse_html(html: str, name: str) -> tuple[str | None, list[RawElement]]:
    """(title, elements) of an HTML page. Title: the page's first ``<h1>``, else ``<title>``."""
    quiet_unstructured()
    from unstructured.partition.html import partition_html

    if not re.search(r"<[a-zA-Z!]", html):
        raise IngestError(f"not HTML: {name} contains no markup")
    try:
        els = partition_html(text=html)
    except Exception as exc:
        raise _partition_error("HTML", name, exc) from exc

    raw = from_unstructured(_drop_link_farms(list(els)), originals=html_tables(html))
    title = None
    if not any(r["kind"] == "heading" and r.get("level") == 1 for r in raw):
        m = re.search(r"<title[^>]*>(.*?)</title>", html, re.I | re.S)
        if m:
            import html as htmllib

            title = _WS.sub(" ", htmllib.unescape(re.sub(r"<[^>]+>", "", m.group(1)))).strip() or None
    return title, raw


# --- Markdown -----------------------------------------------------------------------------------------


def parse_markdown(text: str, name: str) -> tuple[str | None, list[RawElement]]:
    """(None, elements) of a Markdown text; its YAML front matter is not text but the user's metadata
    (``describe``; kbgraph.ingest.metadata). Raises IngestError for front matter with a bad key or value."""
    front, text = split_front_matter(text)
    if front is not None:
        describe(front_matter=user_metadata(front, f"{name}: front matter"))
    quiet_unstructured()
    from unstructured.partition.md import partition_md

    try:
        els = partition_md(text=text)
    except Exception as exc:
        raise _partition_error("Markdown", name, exc) from exc
    return None, from_unstructured(list(els))


# --- PPTX ---------------------------------------------------------------------------------------------


def parse_pptx(data: bytes, name: str) -> tuple[str | None, list[RawElement]]:
    """(title, elements) of a slide deck; ``page`` is the slide number."""
    _check_ooxml(data, name, ".pptx")
    quiet_unstructured()
    from unstructured.partition.pptx import partition_pptx

    try:
        els = partition_pptx(file=io.BytesIO(data), include_page_breaks=False)
    except Exception as exc:
        raise _partition_error(".pptx", name, exc) from exc
    title = None
    try:
        from pptx import Presentation

        core = Presentation(io.BytesIO(data)).core_properties
        describe(properties=office_properties(core))  # author, created, modified (kbgraph.ingest.metadata)
        title = (core.title or "").strip() or None
    except Exception:  # metadata is a nicety
        pass
    return title, from_unstructured(list(els))


# --- DOCX ---------------------------------------------------------------------------------------------


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_HEADING_NAME = re.compile(r"^heading\s*(\d)$", re.I)


def _style_level(style: ParagraphStyle, cache: dict[str | None, int | None]) -> int | None:
    """Heading level of a paragraph style: 'Heading N', or an outline level, following base styles."""
    key = getattr(style, "style_id", None)
    if key in cache:
        return cache[key]
    level = None
    s, hops = style, 0
    while s is not None and hops < 10 and level is None:
        m = _HEADING_NAME.match((s.name or "").strip())
        if m:
            level = int(m.group(1))
            break
        ppr = s.element.find(f"{_W}pPr")
        lvl = ppr.find(f"{_W}outlineLvl") if ppr is not None else None
        if lvl is not None:
            v = int(lvl.get(f"{_W}val", "9"))
            level = v + 1 if v < 9 else None
            break
        s, hops = s.base_style, hops + 1
    cache[key] = level
    return level


def _paragraph_level(p: Paragraph, cache: dict[str | None, int | None]) -> int | None:
    ppr = p._p.pPr
    if ppr is not None:
        lvl = ppr.find(f"{_W}outlineLvl")
        if lvl is not None:
            v = int(lvl.get(f"{_W}val", "9"))
            return v + 1 if v < 9 else None
    try:
        style = p.style
    except Exception:
        return None
    if style is not None and (style.name or "").strip().lower() == "title":
        return 0  # the document title
    return _style_level(style, cache) if style is not None else None


def _docx_table(tbl: Table) -> tuple[list[list[str]], int]:
    rows: list[list[str]] = []
    for row in tbl.rows:
        cells: list[str] = []
        prev = None
        for cell in row.cells:  # a merged cell repeats its object; keep its text in each column it spans
            text = _WS.sub(" ", cell.text).strip() if cell is not prev else cells[-1]
            cells.append(text)
            prev = cell
        rows.append(cells)
    width = max((len(r) for r in rows), default=0)
    return [r + [""] * (width - len(r)) for r in rows], width


def _docx_table_cells(tbl: Any) -> tuple[list[list[str]], int]:  # (a w:tbl lxml element: no type information)
    """The rows of a ``w:tbl`` read cell by cell from the XML, for a merged-cell grid python-docx cannot lay
    out: a cell spanning n grid columns (``gridSpan``) is repeated n times, vertical merges are ignored."""
    rows: list[list[str]] = []
    for tr in tbl.iterchildren(f"{_W}tr"):
        cells: list[str] = []
        for tc in tr.iterchildren(f"{_W}tc"):
            paras = ("".join(t.text or "" for t in p.iter(f"{_W}t")) for p in tc.iter(f"{_W}p"))
            text = _WS.sub(" ", " ".join(paras)).strip()
            span = tc.find(f"{_W}tcPr/{_W}gridSpan")
            try:
                n = max(1, min(int(span.get(f"{_W}val")), 64)) if span is not None else 1
            except (TypeError, ValueError):
                n = 1
            cells.extend([text] * n)
        rows.append(cells)
    width = max((len(r) for r in rows), default=0)
    return [r + [""] * (width - len(r)) for r in rows], width


class _DocxBody:
    """The elements of a .docx body in document order (``raw``): paragraphs (headings by their style, level 0: the
    document's 'Title', kept as ``doc_title``), tables (a one-row or one-column table is a layout box: its cells are
    text), content controls but the table of contents. ``paged``: the document holds rendered page breaks (each
    element gets its page); ``table``, ``paragraph``: python-docx's classes (imported by the caller)."""

    def __init__(self, d: Any, *, paged: bool, table: Any, paragraph: Any):
        self.d, self.paged, self._table, self._paragraph = d, paged, table, paragraph
        self.page = 1
        self.cache: dict[str | None, int | None] = {}
        self.raw: list[RawElement] = []
        self.doc_title: str | None = None
        self.tables = 0
        self.last = ""  # the text before a table, to name it in a warning

    def walk(self, parent: Any) -> None:  # (an lxml element: no type information)
        for child in parent.iterchildren():
            tag = child.tag
            if tag == f"{_W}p":
                self.paragraph(child)
            elif tag == f"{_W}tbl":
                self.table(child)
            elif tag == f"{_W}sdt":
                gallery = child.find(f"{_W}sdtPr/{_W}docPartObj/{_W}docPartGallery")
                if gallery is not None and "contents" in (gallery.get(f"{_W}val") or "").lower():
                    continue  # the table of contents
                content = child.find(f"{_W}sdtContent")
                if content is not None:
                    self.walk(content)

    def _page(self, child: Any) -> int | None:
        """The page ``child`` starts on (None: not paged); the page breaks it renders counted."""
        this_page = self.page if self.paged else None
        if self.paged:
            self.page += len(child.findall(f".//{_W}lastRenderedPageBreak"))
        return this_page

    def paragraph(self, child: Any) -> None:
        p = self._paragraph(child, self.d)
        text = _WS.sub(" ", p.text).strip()
        this_page = self._page(child)
        if not text:
            return
        level = _paragraph_level(p, self.cache)
        self.last = text
        if level == 0:
            self.doc_title = self.doc_title or text
            self.raw.append({"kind": "heading", "text": text, "level": 1, "page": this_page})
        elif level is not None:
            self.raw.append({"kind": "heading", "text": text, "level": level, "page": this_page, "styled": True})
        else:
            self.raw.append({"kind": "text", "text": text, "page": this_page})

    def table(self, child: Any) -> None:
        self.tables += 1
        where = f"table {self.tables}" + (f" (after '{self.last[:60]}')" if self.last else "")
        try:
            rows, width = _docx_table(self._table(child, self.d))
        except Exception as exc:  # an odd merged-cell grid: keep the cells, warn
            try:
                rows, width = _docx_table_cells(child)
            except Exception as exc2:
                warn(f"{where} skipped: {type(exc2).__name__}: {one_line(exc2, 200, empty=UNKNOWN_ERROR)}")
                return
            why = one_line(exc, 200, empty=UNKNOWN_ERROR)
            warn(f"{where}: irregular merged-cell grid ({type(exc).__name__}: {why}); cells read one by one")
        this_page = self._page(child)
        if len(rows) >= 2 and width >= 2:
            md = rows_to_markdown(rows[0], rows[1:])
            self.raw.append({"kind": "table", "text": md, "markdown": md, "page": this_page})
        else:  # a one-row or one-column table is a layout box: its cells are text
            for r in rows:
                for c in dict.fromkeys(r):
                    if c:
                        self.raw.append({"kind": "text", "text": c, "page": this_page})


def parse_docx(data: bytes, name: str) -> tuple[str | None, list[RawElement]]:
    """(title, elements) of a .docx: python-docx heading styles, else ``partition_docx``."""
    _check_ooxml(data, name, ".docx")
    try:
        import docx
        from docx.table import Table
        from docx.text.paragraph import Paragraph

        d = docx.Document(io.BytesIO(data))
    except Exception as exc:
        why = one_line(exc, 200, empty=UNKNOWN_ERROR)
        raise IngestError(f"corrupt or unreadable .docx {name}: {type(exc).__name__}: {why}") from exc

    title = (d.core_properties.title or "").strip() or None
    describe(properties=office_properties(d.core_properties))  # author, created, modified (kbgraph.ingest.metadata)
    body = _DocxBody(
        d, paged=d.element.body.find(f".//{_W}lastRenderedPageBreak") is not None, table=Table, paragraph=Paragraph
    )
    body.walk(d.element.body)
    raw, doc_title = body.raw, body.doc_title
    if any(r.get("styled") for r in raw):
        # A 'Title' paragraph sits above the Heading 1 chapters: push styled headings one level down.
        if doc_title is not None:
            for r in raw:
                level = r.get("level")
                if r.get("styled") and level is not None:  # (a styled heading has its level)
                    r["level"] = min(level + 1, 6)
        return title or doc_title, raw
    log.info("%s: no heading styles; falling back to unstructured.partition_docx", name)
    quiet_unstructured()
    from unstructured.partition.docx import partition_docx

    try:
        els = partition_docx(file=io.BytesIO(data))
    except Exception as exc:  # python-docx read it: keep that reading, without headings
        warn(
            f"unstructured.partition_docx failed ({type(exc).__name__}: {one_line(exc, 200, empty=UNKNOWN_ERROR)}); "
            "read with python-docx, without headings"
        )
        return title or doc_title, raw
    return title or doc_title, from_unstructured(list(els))
