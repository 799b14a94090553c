"""The page of a PDF chunk as a PNG image (``GET /v1/kb/{name}/chunks/{id}/page.png``, issue 57): the page the
chunk's ``page`` names in its document's source file, rendered by pymupdf at most :data:`MAX_WIDTH` x
:data:`MAX_HEIGHT` pixels, with the chunk's text highlighted where ``page.search_for`` finds it (translucent
rectangles; a table row: its first cell and the cells beside it on the same line).

Bounded: only a chunk of a ``file:`` document ending in ``.pdf`` whose file still starts with ``%PDF`` (anything
else: :class:`NoPage`, a 404), only the one page, at a bounded resolution; cached in memory (the newest
:data:`CACHE_SIZE` images, keyed by the file's sha256, the page and the chunk id, so a changed file is rendered
anew). The route checks the chunk as ``GET .../chunks/{id}`` does (the ``read`` right, a complete document).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from kbgraph.errors import KBGraphError

__all__ = ["CACHE_SIZE", "MAX_HEIGHT", "MAX_WIDTH", "NoPage", "PageCache", "render_page"]

MAX_WIDTH = 1200
MAX_HEIGHT = 1600
#: The most a page is scaled up (a small page is not blown up past twice its size in points).
MAX_ZOOM = 2.0
CACHE_SIZE = 32
#: Highlight: yellow, at this opacity.
FILL = (1.0, 0.85, 0.0)
OPACITY = 0.35
#: At most this many lines of the chunk are searched, and this many rectangles drawn.
MAX_LINES = 60
MAX_RECTS = 200


class NoPage(KBGraphError):
    """The chunk has no PDF page to show (not a PDF, no page, the file gone): HTTP 404."""

    exit_code = 1


def source_pdf(chunk: dict[str, Any]) -> tuple[Path, int]:
    """The PDF file and 1-based page of a chunk row (``KnowledgeBase.chunk``), or NoPage."""
    uri, page = str(chunk.get("document_uri") or ""), chunk.get("page")
    parsed = urlparse(uri)
    if parsed.scheme != "file" or not parsed.path.lower().endswith(".pdf"):
        raise NoPage(f"chunk {chunk.get('id')!r} is not from a PDF file: there is no page image")
    if not isinstance(page, int) or page < 1:
        raise NoPage(f"chunk {chunk.get('id')!r} has no page number")
    return Path(unquote(parsed.path)), page


def _cells(line: str) -> list[str]:
    """The searchable pieces of one line of chunk text (a Markdown table row: its cells; a separator row: none)."""
    line = line.strip()
    if "|" not in line:
        return [line] if len(line) >= 3 else []
    cells = [c.strip() for c in line.strip("|").split("|")]
    return [c for c in cells if c and set(c) - set("-: ")]


def _separator(line: str) -> bool:
    """True for a Markdown table's separator row (``|---|:--|``)."""
    line = line.strip()
    return "-" in line and "|" in line and not set(line) - set("|-: ")


def _highlights(page: Any, text: str) -> list[Any]:
    """Rectangles of ``page`` holding the chunk's ``text``: each line found whole, or a table row as its first
    cell and the cells found on the same line beside it."""
    rects: list[Any] = []
    lines = text.splitlines()[:MAX_LINES]
    for i, line in enumerate(lines):
        cells = _cells(line)
        if not cells or (i + 1 < len(lines) and _separator(lines[i + 1])):  # a table's header row: not the passage
            continue
        if len(cells) == 1:
            rects += page.search_for(cells[0][:300])[:4]
        else:
            for anchor in page.search_for(cells[0][:300])[:3]:
                row, mid = anchor, (anchor.y0 + anchor.y1) / 2
                for cell in cells[1:]:
                    for r in page.search_for(cell[:300]):
                        if abs((r.y0 + r.y1) / 2 - mid) <= max(anchor.height, 2.0) / 2:
                            row = row | r
                rects.append(row)
        if len(rects) >= MAX_RECTS:
            break
    return rects[:MAX_RECTS]


def render_page(path: Path, page_no: int, text: str = "") -> bytes:
    """Page ``page_no`` (1-based) of the PDF at ``path`` as PNG bytes, ``text`` highlighted; NoPage when the
    file is not a PDF or has no such page."""
    import pymupdf

    try:
        with path.open("rb") as f:
            if f.read(5) != b"%PDF-":
                raise NoPage(f"{path.name} is not a PDF file")
        doc = pymupdf.open(path)
    except (OSError, RuntimeError, ValueError) as exc:
        raise NoPage(f"cannot open {path.name} as a PDF ({type(exc).__name__})") from None
    try:
        if not 1 <= page_no <= doc.page_count:
            raise NoPage(f"{path.name} has no page {page_no}")
        page = doc[page_no - 1]
        for rect in _highlights(page, text):
            page.draw_rect(rect, color=None, fill=FILL, fill_opacity=OPACITY, overlay=True)
        width, height = max(page.rect.width, 1.0), max(page.rect.height, 1.0)
        zoom = min(MAX_ZOOM, MAX_WIDTH / width, MAX_HEIGHT / height)
        pixmap = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
        return bytes(pixmap.tobytes("png"))
    finally:
        doc.close()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise NoPage(f"the source file of this chunk cannot be read: {exc.strerror or exc}") from None
    return digest.hexdigest()


class PageCache:
    """The newest ``size`` page images, keyed by (file sha256, page, chunk id); thread-safe."""

    def __init__(self, size: int = CACHE_SIZE):
        self.size = size
        self._images: OrderedDict[tuple[str, int, str], bytes] = OrderedDict()
        self._lock = threading.Lock()

    def image(self, chunk: dict[str, Any]) -> bytes:
        """The PNG of the chunk's page (rendered once per key); NoPage when it has none."""
        path, page = source_pdf(chunk)
        key = (file_sha256(path), page, str(chunk.get("id")))
        with self._lock:
            if key in self._images:
                self._images.move_to_end(key)
                return self._images[key]
        png = render_page(path, page, str(chunk.get("text") or ""))
        with self._lock:
            self._images[key] = png
            while len(self._images) > self.size:
                self._images.popitem(last=False)
        return png
