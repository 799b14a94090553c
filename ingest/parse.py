"""Ingestion stage 1: a source file -> a ``ParsedDocument`` (PIKE-RAG §5.1: the information-resource layer
starts from each document's own structure: headings, text, tables, pages).

``parse_file(path, max_bytes=...)`` reads one file; ``parse_passages_jsonl(path)`` reads a passage corpus
(one JSON object ``{"id", "title", "text"}`` a line, as in the multi-hop QA benchmarks) as one document per
passage. Every element comes in reading order; headings carry a level (1 = top) from which the chunker
builds the Section tree.

Formats: PDF with PyMuPDF (``parse_pdf``); DOCX with python-docx heading styles, falling back to
``unstructured`` when the document uses none; HTML, PPTX, Markdown and e-mail with ``unstructured``
(``parse_unstructured``); plain text read directly, its encoding detected with charset-normalizer.

Every failure a user can cause (empty, too large, unsupported, corrupt, password-protected, no text) raises
``IngestError`` with a one-line message that names the file and the fix.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Literal
from urllib.parse import quote

from pydantic import BaseModel, Field

from kbgraph.errors import IngestError

log = logging.getLogger(__name__)

#: extension -> MIME type of every format ``parse_file`` reads.
MIME_TYPES: dict[str, str] = {
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".html": "text/html",
    ".htm": "text/html",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".eml": "message/rfc822",
    ".txt": "text/plain",
    ".text": "text/plain",
}
#: A passage corpus (``parse_passages_jsonl``).
JSONL_MIME = "application/x-ndjson"
#: Headings longer than this are demoted to text (a mis-tagged paragraph would otherwise name a section).
MAX_HEADING_CHARS = 200
MAX_HEADING_WORDS = 30

#: Preferred single-byte encodings when several fit a non-UTF-8 text about equally well.
WESTERN_ENCODINGS: tuple[str, ...] = ("cp1252", "latin_1", "iso8859_15")

_WS = re.compile(r"\s+")
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
    passage)."""

    uri: str
    title: str
    mime: str
    sha256: str
    elements: list[Element] = Field(default_factory=list)


def supported_extensions() -> list[str]:
    return sorted(MIME_TYPES) + [".jsonl"]


def _one_line(text: object, limit: int = 200) -> str:
    s = _WS.sub(" ", str(text)).strip()
    return s if len(s) <= limit else s[: limit - 1] + "…"


def normalize_elements(raw: list[dict]) -> list[Element]:
    """Clean parser output: collapse whitespace (tables keep their lines), drop empty elements, demote
    over-long headings to text, clamp heading levels to 1..6."""
    out: list[Element] = []
    for r in raw:
        kind = r["kind"]
        if kind == "table":
            md = (r.get("markdown") or r.get("text") or "").strip()
            if not md or not re.search(r"\w", md):
                continue
            out.append(Element(kind="table", text=md, markdown=md, page=r.get("page")))
            continue
        text = _WS.sub(" ", r.get("text") or "").strip()
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


def decode_text(data: bytes, name: str) -> str:
    """Bytes of a text file -> str: UTF-8 (with or without BOM) when valid, else the encoding
    charset-normalizer finds most likely (cp1252, latin-1, UTF-16…)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data))
    if not matches:
        raise IngestError(f"cannot decode {name}: not text in any known encoding (binary file?)")
    best = min(matches, key=lambda m: m.chaos)
    # Short texts fit several single-byte code pages about equally well; charset-normalizer then picks one
    # arbitrarily (cp1250 or cp1257 for French). Among the near-best, prefer Windows-1252 / Latin-1, by far
    # the most common non-UTF-8 encodings of Western text.
    near = [m for m in matches if m.chaos <= best.chaos + 0.1]
    for preferred in WESTERN_ENCODINGS:
        if any(m.encoding == preferred or preferred in m.could_be_from_charset for m in near):
            try:
                return data.decode(preferred)
            except UnicodeDecodeError:
                continue
    return str(best)


def _check_file(path: Path, max_bytes: int) -> tuple[str, int]:
    if not path.exists():
        raise IngestError(f"file not found: {path}")
    if not path.is_file():
        raise IngestError(f"not a regular file: {path}")
    ext = path.suffix.lower()
    if ext not in MIME_TYPES:
        hint = " (a JSONL passage corpus is read with parse_passages_jsonl)" if ext == ".jsonl" else ""
        raise IngestError(
            f"unsupported file type '{ext or path.name}': {path.name}{hint}; "
            f"supported: {', '.join(supported_extensions())}"
        )
    size = path.stat().st_size
    if size == 0:
        raise IngestError(f"empty file (0 bytes): {path}")
    if size > max_bytes:
        raise IngestError(
            f"file too large: {path.name} is {size:,} bytes, over the limit of {max_bytes:,} "
            "(raise max_file_bytes to ingest it)"
        )
    return ext, size


def _title_from_stem(path: Path) -> str:
    return path.stem


def parse_file(path: Path, *, max_bytes: int) -> ParsedDocument:
    """Parse one file into a ParsedDocument. Raises IngestError for empty (0 bytes or only whitespace),
    too large, unsupported, corrupt, password-protected or text-less files."""
    path = Path(path)
    ext, _ = _check_file(path, max_bytes)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise IngestError(f"cannot read {path}: {_one_line(exc)}") from exc
    if not data.strip():
        raise IngestError(f"empty file (only whitespace): {path}")
    sha = hashlib.sha256(data).hexdigest()
    mime = MIME_TYPES[ext]
    name = path.name
    title: str | None = None

    if ext == ".pdf":
        from kbgraph.ingest.parse_pdf import parse_pdf

        title, raw = parse_pdf(data, name)
    elif ext in (".txt", ".text"):
        raw = _parse_plain_text(decode_text(data, name))
    else:
        from kbgraph.ingest import parse_unstructured as pu

        if ext == ".docx":
            title, raw = pu.parse_docx(data, name)
        elif ext == ".pptx":
            title, raw = pu.parse_pptx(data, name)
        elif ext in (".html", ".htm"):
            title, raw = pu.parse_html(decode_text(data, name), name)
        elif ext in (".md", ".markdown"):
            title, raw = pu.parse_markdown(decode_text(data, name), name)
        elif ext == ".eml":
            title, raw = pu.parse_email(data, name)
        else:  # pragma: no cover - MIME_TYPES and this dispatch agree
            raise IngestError(f"unsupported file type '{ext}': {name}")

    elements = normalize_elements(raw)
    if not any(e.kind in ("text", "table") for e in elements) and not any(e.kind == "heading" for e in elements):
        hint = " (a scanned PDF needs OCR first)" if ext == ".pdf" else ""
        raise IngestError(f"no extractable text in {name}{hint}")
    if not title:
        # The one top-level heading names the document; several (chapters) do not: then the file name.
        top = [e for e in elements if e.kind == "heading" and e.level == 1]
        title = top[0].text if len(top) == 1 else _title_from_stem(path)
    return ParsedDocument(
        uri=path.resolve().as_uri(), title=_one_line(title, 300), mime=mime, sha256=sha, elements=elements
    )


def _parse_plain_text(text: str) -> list[dict]:
    """Plain text: paragraphs at blank lines (a very long paragraph stays one element; the chunker splits
    it by sentences)."""
    if "\x00" in text:
        raise IngestError("binary data in a text file (NUL bytes)")
    paragraphs = re.split(r"\n\s*\n", text.replace("\r\n", "\n").replace("\r", "\n"))
    return [{"kind": "text", "text": p} for p in paragraphs if p.strip()]


def parse_passages_jsonl(path: Path) -> Iterator[ParsedDocument]:
    """One ParsedDocument per JSONL line ``{"id", "title", "text"}`` (``id`` defaults to the line number,
    ``title`` to the id). uri = ``<file uri>#<id>``; sha256 of ``title + "\\n" + text``; one text element.
    Blank lines are skipped; a line that is not a JSON object with a ``text`` raises IngestError."""
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
                raise IngestError(f"{path.name} line {lineno}: not valid UTF-8 JSON ({_one_line(exc, 120)})") from exc
            if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
                raise IngestError(f'{path.name} line {lineno}: expected an object with a "text" string')
            pid = str(obj.get("id") if obj.get("id") not in (None, "") else lineno)
            if pid in seen:
                raise IngestError(f"{path.name} line {lineno}: duplicate passage id {pid!r}")
            seen.add(pid)
            title = _WS.sub(" ", str(obj.get("title") or "")).strip() or pid
            text = obj["text"]
            sha = hashlib.sha256(f"{title}\n{text}".encode()).hexdigest()
            elements = [Element(kind="text", text=_WS.sub(" ", text).strip())] if text.strip() else []
            n += 1
            uri = f"{base}#{quote(pid, safe=_FRAGMENT_SAFE)}"
            yield ParsedDocument(uri=uri, title=title, mime=JSONL_MIME, sha256=sha, elements=elements)
    if n == 0:
        raise IngestError(f"empty passage corpus (no JSON lines): {path}")
