"""Ingestion stage 1: a source file -> a ``ParsedDocument`` (PIKE-RAG §5.1: the information-resource layer
starts from each document's own structure: headings, text, tables, pages).

``parse_file(path, max_bytes=...)`` reads one file; ``parse_passages_jsonl(path)`` reads a passage corpus
(one JSON object ``{"id", "title", "text"}`` a line, as in the multi-hop QA benchmarks) as one document per
passage. Every element comes in reading order; headings carry a level (1 = top) from which the chunker
builds the Section tree.

Formats (``MIME_TYPES``):

- PDF with PyMuPDF (``parse_pdf``); DOCX with python-docx heading styles, falling back to ``unstructured``
  when the document uses none; HTML, PPTX and Markdown with ``unstructured`` (``parse_unstructured``).
- Spreadsheets (.xlsx/.xlsm, .xls, .ods, .csv, .tsv): one Markdown table element per sheet, header row kept,
  long sheets in row blocks that repeat it (``parse_sheets``).
- .odt, .rtf, .epub, .rst, .org, .xml, legacy .doc/.ppt (``parse_office``: pandoc from pypandoc-binary,
  ``unstructured``, LibreOffice when installed).
- E-mail .eml and Outlook .msg with their attachments (``parse_email``).
- Plain text read directly, its encoding found by ``kbgraph.ingest.decode`` (a byte-order mark, UTF-16's NUL
  pattern, UTF-8, or charset-normalizer).
- Images (.png, .jpg, .tif, .bmp, .webp) and PDF pages without a text layer by OCR through Tesseract
  (``kbgraph.ingest.ocr``; setting ``ocr``), when Tesseract is installed.

``skip_reason(path)`` says why a file is not read at all (images without OCR, archives, audio, unknown
types, legacy Office without LibreOffice) and how to fix it; a directory ingest reports such files as
skipped. A fault in one element (a table, an attachment) skips that element and keeps the rest: the
message, naming the element, goes to ``ParsedDocument.warnings``.

Every failure a user can cause (empty, too large, unsupported, corrupt, password-protected, no text) raises
``IngestError`` with a one-line message that names the file and the fix; so does a file that expands beyond the
parse bounds (a decompression bomb: zip members' sizes, ratios and XML elements, PDF pages and decoded streams,
the parse's time; ``kbgraph.ingest.bounds``, settings ``max_expanded_bytes`` ... ``max_parse_seconds``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal
from urllib.parse import quote

from pydantic import BaseModel, Field

from kbgraph.errors import IngestError
from kbgraph.ingest.decode import decode_text
from kbgraph.ingest.metadata import user_metadata
from kbgraph.ingest.parse_common import FILE_PROPERTIES, FRONT_MATTER, MIME_TYPES, WARNINGS, RawElement
from kbgraph.ingest.parse_common import register_dispatch
from kbgraph.ingest.properties import detect_language
from kbgraph.models import MetadataValue
from kbgraph.ingest.parse_common import UNKNOWN_ERROR as UNKNOWN_ERROR  # re-exported
from kbgraph.ingest.parse_common import warn as warn  # re-exported
from kbgraph.text import one_line
from kbgraph.ingest import bounds as bounds_mod, ocr as ocr_mod, parse_email, parse_unstructured as pu
from kbgraph.ingest.bounds import ParseBounds
from kbgraph.ingest.ocr import OCR_IMAGES, OcrOptions, parse_image
from kbgraph.ingest.parse_office import parse_office, unread_reason
from kbgraph.ingest.parse_pdf import parse_pdf
from kbgraph.ingest.parse_sheets import parse_sheet_file
from kbgraph.ingest.titles import choose_title

log = logging.getLogger(__name__)

#: A passage corpus (``parse_passages_jsonl``).
JSONL_MIME = "application/x-ndjson"
#: Extensions of JSON Lines, read as passage corpora (``parse_passages_jsonl``).
JSONL_EXTENSIONS: tuple[str, ...] = (".jsonl", ".ndjson")
#: Headings longer than this are demoted to text (a mis-tagged paragraph would otherwise name a section).
MAX_HEADING_CHARS = 200
MAX_HEADING_WORDS = 30

_WS = re.compile(r"\s+")
#: C0 control characters but tab, newline and CR (a PDF's bullets as U+0007, escapes, NULs): removed from every
#: parser's text; the separators among them (VT, FF, FS..US) become a space.
_CONTROLS: dict[int, str | None] = {c: None for c in range(32) if chr(c) not in "\t\n\r"}
_CONTROLS.update({c: " " for c in (0x0B, 0x0C, 0x1C, 0x1D, 0x1E, 0x1F)})
_FRAGMENT_SAFE = "-._~:@!$&'()*+,;=/?"  # characters a URI fragment may hold unescaped (RFC 3986)


class Element(BaseModel):
    """One unit of a document in reading order. ``level``: heading level (1 = top) for headings, else None.
    ``page``: 1-based page (PDF; DOCX/PPTX where known), else None. ``markdown``: the table as Markdown
    (tables only; ``text`` then holds the same Markdown)."""

    kind: Literal["heading", "text", "table"]
    text: str
    level: int | None = None
    page: int | None = None
    markdown: str | None = None


class ParsedDocument(BaseModel):
    """A parsed source. ``sha256``: of the file's raw bytes (for a passage: of ``title + "\\n" + text``),
    the change detector for incremental ingestion. ``uri``: ``file://`` URI of the file (``#<id>`` for a
    passage). ``warnings``: one line per element that was skipped or read in a degraded way (a table with a
    broken grid, an attachment that needs OCR or speech-to-text), naming the element and why."""

    uri: str
    title: str
    mime: str
    sha256: str
    #: the other usable titles the file gives (metadata, first-page heading, file name; kbgraph.ingest.titles)
    title_alternatives: list[str] = Field(default_factory=list)
    elements: list[Element] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    #: pages read by OCR (an image file: its frames), and Tesseract's mean word confidence (0..100) per page
    ocr_pages: list[int] = Field(default_factory=list)
    ocr_confidence: dict[int, float] = Field(default_factory=dict)
    #: what the file says about itself (author, created, modified; kbgraph.ingest.properties) and the ``language``
    #: of its text; the user's keys in its front matter (a passage: its ``metadata`` object); the merged metadata
    #: and the JSON a re-ingest merges it anew from (kbgraph.ingest.metadata.apply_metadata)
    properties: dict[str, MetadataValue] = Field(default_factory=dict)
    front_matter: dict[str, MetadataValue] = Field(default_factory=dict)
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    file_metadata: str | None = None


def supported_extensions(ocr: bool = False) -> list[str]:
    """Extensions read (image files too when ``ocr``: OCR is on and Tesseract installed)."""
    return sorted(MIME_TYPES) + list(JSONL_EXTENSIONS) + (sorted(OCR_IMAGES) if ocr else [])


def clean_text(text: str) -> str:
    """``text`` without C0 control characters (tab, newline and CR kept; VT, FF and the separators FS..US
    become a space). Every parser's output goes through it (``normalize_elements``, passages, titles)."""
    return text.translate(_CONTROLS)


def normalize_elements(raw: list[RawElement]) -> list[Element]:
    """Clean parser output: strip control characters (``clean_text``), collapse whitespace (tables keep their
    lines), drop empty elements, demote over-long headings to text, clamp heading levels to 1..6."""
    out: list[Element] = []
    for r in raw:
        kind = r["kind"]
        if kind == "table":
            md = clean_text(r.get("markdown") or r.get("text") or "").strip()
            if not md or not re.search(r"\w", md):
                continue
            out.append(Element(kind="table", text=md, markdown=md, page=r.get("page")))
            continue
        text = _WS.sub(" ", clean_text(r.get("text") or "")).strip()
        if not text or not re.search(r"\w", text):
            continue
        if kind == "heading":
            if len(text) > MAX_HEADING_CHARS or len(text.split()) > MAX_HEADING_WORDS:
                kind = "text"
            else:
                level = min(max(int(r.get("level") or 1), 1), 6)
                out.append(Element(kind="heading", text=text, level=level, page=r.get("page")))
                continue
        out.append(Element(kind="text", text=text, page=r.get("page")))
    return out


def skip_reason(path: Path, ocr: OcrOptions | None = None) -> str | None:
    """Why ``parse_file`` would not read ``path`` at all, as one line with the fix (e.g. "image: no OCR
    configured; …"), or None when it reads that kind of file (``.jsonl`` included). Decided by the name
    alone (and, for legacy .doc/.ppt, whether LibreOffice is installed; for images, whether OCR runs:
    ``ocr``, the run's ``OcrOptions``, default the parse's own), so a directory walk can report it without
    opening the file."""
    options = ocr or ocr_mod.current()
    return unread_reason(Path(path).name, supported_extensions(options.enabled), ocr=options)


def _check_file(path: Path, max_bytes: int) -> tuple[str, int]:
    if not path.exists():
        raise IngestError(f"file not found: {path}")
    if not path.is_file():
        raise IngestError(f"not a regular file: {path}")
    ext = path.suffix.lower()
    if ext in JSONL_EXTENSIONS:
        raise IngestError(
            f"unsupported file type '{ext}': {path.name} (a JSON Lines passage corpus is read with "
            "parse_passages_jsonl)"
        )
    reason = skip_reason(path)
    if (ext not in MIME_TYPES and ext not in _ocr_images()) or reason:
        raise IngestError(f"cannot ingest {path.name}: {reason or 'unsupported file type'}")
    size = path.stat().st_size
    if size == 0:
        raise IngestError(f"empty file (0 bytes): {path}")
    if size > max_bytes:
        raise IngestError(
            f"file too large: {path.name} is {size:,} bytes, over the limit of {max_bytes:,} "
            "(raise max_file_bytes to ingest it)"
        )
    return ext, size


def _first_heading(elements: Sequence[Element]) -> tuple[str | None, bool]:
    """(the heading that may name a document, whether it surely does; kbgraph.ingest.titles): its one top-level
    heading (True; several are chapters), else the first heading on its first page (a PDF's cover; False), else
    (None, False)."""
    top = [e for e in elements if e.kind == "heading" and e.level == 1]
    if len(top) == 1:
        return top[0].text, True
    return next((e.text for e in elements if e.kind == "heading" and e.page == 1), None), False


def _ocr_images() -> dict[str, str]:
    return OCR_IMAGES


def parse_file(
    path: Path, *, max_bytes: int, ocr: OcrOptions | None = None, bounds: ParseBounds | None = None
) -> ParsedDocument:
    """Parse one file into a ParsedDocument (its ``warnings`` list the elements skipped on the way). ``ocr``:
    ``kbgraph.ingest.ocr.OcrOptions`` (default: ``auto``, English, 300 dpi); the pages it read are in
    ``ocr_pages``. ``bounds``: what the file may expand to and how long its parse may take
    (``kbgraph.ingest.bounds.ParseBounds``; default: the settings' defaults). Raises IngestError for empty (0 bytes
    or only whitespace), too large (on disk or unpacked), unsupported, corrupt, password-protected or text-less
    files, and for one whose parse takes too long."""
    path = Path(path)
    with ocr_mod.using(ocr) as record, bounds_mod.using(bounds, path.name):
        doc = _parse_file(path, max_bytes)
    if record.pages:
        options = ocr_mod.current() if ocr is None else ocr
        pages = ", ".join(map(str, sorted(record.pages)))
        doc.warnings.append(
            f"read by OCR: page{'s' if len(record.pages) > 1 else ''} {pages} (no text layer; "
            f"Tesseract, {options.languages})"
        )
        doc.ocr_pages, doc.ocr_confidence = sorted(record.pages), dict(record.confidence)
    return doc


def _parse_file(path: Path, max_bytes: int) -> ParsedDocument:
    ext, _ = _check_file(path, max_bytes)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise IngestError(f"cannot read {path}: {one_line(exc, 200)}") from exc
    if not data.strip():
        raise IngestError(f"empty file (only whitespace): {path}")
    sha = hashlib.sha256(data).hexdigest()
    name = path.name
    warnings: list[str] = []
    properties: dict[str, object] = {}
    front_matter: dict[str, object] = {}
    tokens = WARNINGS.set(warnings), FILE_PROPERTIES.set(properties), FRONT_MATTER.set(front_matter)
    try:
        title, raw = parse_bytes(data, ext, name)
    finally:
        FRONT_MATTER.reset(tokens[2])
        FILE_PROPERTIES.reset(tokens[1])
        WARNINGS.reset(tokens[0])
    for message in warnings:
        log.warning("%s: %s", name, message)

    elements = normalize_elements(raw)
    if not elements:
        options = ocr_mod.current()
        hint = ""
        if ext == ".pdf":
            hint = (
                " (OCR found none either)"
                if options.enabled
                else f" (a scanned PDF needs OCR first: {options.why_not()})"
            )
        elif ext in _ocr_images():
            hint = " (OCR found none)"
        raise IngestError(f"no extractable text in {name}{hint}")
    heading, names_document = _first_heading(elements)
    choice = choose_title(clean_text(title) if title else None, heading, path, heading_names_document=names_document)
    return ParsedDocument(
        uri=path.resolve().as_uri(),
        title=one_line(clean_text(choice.title), 300),
        title_alternatives=[one_line(clean_text(t), 300) for t in choice.alternatives],
        mime=MIME_TYPES.get(ext) or _ocr_images()[ext],
        sha256=sha,
        elements=elements,
        warnings=warnings,
        front_matter=front_matter,
        properties=_with_language(properties, elements),
    )


def _with_language(properties: dict[str, object], elements: Sequence[Element]) -> dict[str, MetadataValue]:
    """The file's ``properties`` (text values as parsers record them, kbgraph.ingest.properties) with the
    ``language`` of its text (``detect_language`` on its first text elements, tables left out) when it tells."""
    out: dict[str, MetadataValue] = {k: v for k, v in properties.items() if isinstance(v, str) and v}
    sample = " ".join(e.text for e in elements if e.kind != "table")
    language = detect_language(sample)
    if language:
        out["language"] = language
    return out


def parse_bytes(data: bytes, ext: str, name: str) -> tuple[str | None, list[RawElement]]:
    """(title or None, raw element dicts) of the bytes of a file of type ``ext`` (a key of ``MIME_TYPES``);
    ``name`` is used in messages. The dispatch behind ``parse_file``, also used for e-mail attachments.
    Raises IngestError, also for a zip package that expands beyond the bounds of the parse under way
    (``kbgraph.ingest.bounds.check_zip``; a PDF's: ``parse_pdf``)."""
    if bounds_mod.is_zip_format(ext, data):
        bounds_mod.check_zip(data, name)
    if ext == ".pdf":
        return parse_pdf(data, name)
    if ext in (".txt", ".text"):
        return None, _parse_plain_text(decode_text(data, name))
    if ext in (".xlsx", ".xlsm", ".xls", ".ods", ".csv", ".tsv"):
        return parse_sheet_file(data, ext, name)
    if ext in (".eml", ".msg"):
        return parse_email.parse_eml(data, name) if ext == ".eml" else parse_email.parse_msg(data, name)
    if ext in (".odt", ".rtf", ".epub", ".rst", ".org", ".xml", ".doc", ".ppt"):
        return parse_office(data, ext, name)

    if ext == ".docx":
        return pu.parse_docx(data, name)
    if ext == ".pptx":
        return pu.parse_pptx(data, name)
    if ext in (".html", ".htm"):
        return pu.parse_html(decode_text(data, name), name)
    if ext in (".md", ".markdown"):
        return pu.parse_markdown(decode_text(data, name), name)
    if ext in _ocr_images():
        return parse_image(data, ext, name)
    raise IngestError(f"unsupported file type '{ext}': {name}")


def _parse_plain_text(text: str) -> list[RawElement]:
    """Plain text: paragraphs at blank lines (a very long paragraph stays one element; the chunker splits
    it by sentences)."""
    paragraphs = re.split(r"\n\s*\n", text.replace("\r\n", "\n").replace("\r", "\n"))
    return [{"kind": "text", "text": p} for p in paragraphs if p.strip()]


def parse_passages_jsonl(path: Path) -> Iterator[ParsedDocument]:
    """One ParsedDocument per JSONL line ``{"id", "title", "text"}`` (``id`` defaults to the line number,
    ``title`` to the id; an optional ``metadata`` object holds the passage's own metadata keys, checked by
    ``kbgraph.ingest.metadata.user_metadata``, ``title`` not among them). uri = ``<file uri>#<id>``; sha256 of ``title + "\\n" + text``; one text element
    (control characters stripped, ``clean_text``). Any name ending in ``JSONL_EXTENSIONS`` (``.jsonl``,
    ``.ndjson``). Blank lines are skipped; a line that is not a JSON object with a ``text`` raises IngestError
    naming the fields expected and those found."""
    path = Path(path)
    if not path.is_file():
        raise IngestError(f"file not found: {path}")
    if path.stat().st_size == 0:
        raise IngestError(f"empty file (0 bytes): {path}")
    base = path.resolve().as_uri()
    seen: set[str] = set()
    n = 0
    with path.open("rb") as fh:
        for lineno, raw_line in enumerate(fh, start=1):
            if not raw_line.strip():
                continue
            try:
                obj = json.loads(raw_line.decode("utf-8-sig" if lineno == 1 else "utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise IngestError(f"{path.name} line {lineno}: not valid UTF-8 JSON ({one_line(exc, 120)})") from exc
            if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
                raise IngestError(f"{path.name} line {lineno}: not a passage corpus: {_corpus_mismatch(obj)}")
            pid = str(obj.get("id") if obj.get("id") not in (None, "") else lineno)
            if pid in seen:
                raise IngestError(f"{path.name} line {lineno}: duplicate passage id {pid!r}")
            seen.add(pid)
            title = _WS.sub(" ", clean_text(str(obj.get("title") or ""))).strip() or pid
            text = clean_text(obj["text"])
            sha = hashlib.sha256(f"{title}\n{text}".encode()).hexdigest()
            elements = [Element(kind="text", text=_WS.sub(" ", text).strip())] if text.strip() else []
            n += 1
            uri = f"{base}#{quote(pid, safe=_FRAGMENT_SAFE)}"
            own = obj.get("metadata")
            front = {} if own is None else user_metadata(own, f"{path.name} line {lineno}: metadata", title=False)
            language = detect_language(text)
            yield ParsedDocument(
                uri=uri,
                title=title,
                mime=JSONL_MIME,
                sha256=sha,
                elements=elements,
                front_matter=front,
                properties={"language": language} if language else {},
            )
    if n == 0:
        raise IngestError(f"empty passage corpus (no JSON lines): {path}")


def _corpus_mismatch(obj: object) -> str:
    """What a JSON Lines line that is no passage should have held, and what it holds."""
    want = 'each line must be a JSON object {"id", "title", "text"} with a "text" string ("id", "title" optional)'
    if isinstance(obj, dict):
        if "text" in obj:
            return f'{want}; its "text" is a {type(obj["text"]).__name__}'
        keys = ", ".join(sorted(str(k) for k in obj)[:20]) or "none"
        return f"{want}; found the keys {keys} (save other JSON data as .txt, or rename its text field)"
    kinds = {list: "a JSON array", str: "a JSON string", type(None): "null", bool: "a boolean"}
    kind = kinds.get(type(obj), "a number")
    return f"{want}; found {kind}"


register_dispatch(parse_bytes, skip_reason)  # an e-mail's attachments (kbgraph.ingest.parse_common.dispatch)
