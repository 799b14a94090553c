"""PDF page layout: text lines, paragraphs and reading order (kbgraph.ingest.parse_pdf; PIKE-RAG §5.1.1).

- **Text direction**: a page is read turned so that most of its text (by characters) reads left to right
  (``upright_rotation``): a page whose text runs sideways or upside down on screen (a portrait page turned by
  ``/Rotate``, a landscape table typeset sideways) is read like an upright one.
- **Text**: MuPDF's blocks and lines; vertical text (on the page as read), repeated page headers/footers (same
  text, digits ignored, in the top or bottom 10% of at least half the pages) and number-only blocks (page and
  line numbers) are dropped; line-end hyphenation before a lower-case letter is undone.
- **Reading order**: per page, items are cut into horizontal bands at full-width items; inside a band,
  narrow items are grouped into columns by horizontal overlap and read column by column, top to bottom.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from pymupdf import Matrix, Rect

_WS = re.compile(r"\s+")
MARGIN = 0.10  # top/bottom fraction of the page where running headers/footers live


class TextSpan(TypedDict, total=False):
    """A span of MuPDF's text dict (``page.get_text("dict")``), as read here."""

    text: str
    size: float
    flags: int
    font: str


class TextLine(TypedDict, total=False):
    """A line of MuPDF's text dict: its spans, its direction (unit vector, y pointing down) and box."""

    spans: list[TextSpan]
    dir: tuple[float, float]
    bbox: tuple[float, float, float, float]


class TextBlock(TypedDict, total=False):
    """A block of MuPDF's text dict: ``type`` 0 for text (1: an image), its lines."""

    type: int
    lines: list[TextLine]


class TextDict(TypedDict, total=False):
    """MuPDF's text dict of a page (``page.get_text("dict")``), as read here: its blocks."""

    blocks: list[TextBlock]


class PdfTable(TypedDict):
    """A table rebuilt by ``kbgraph.ingest.pdf_tables.extract_table``: its caption, composed header (None: no
    header row), body rows, notes below it and number of columns."""

    caption: str | None
    header: list[str] | None
    rows: list[list[str]]
    notes: list[str]
    ncols: int


@dataclass
class Line:
    """One printed line of text: its text, box (points, display coordinates), mean font size, boldness and
    number of non-blank characters."""

    text: str
    bbox: tuple[float, float, float, float]
    size: float  # character-weighted mean span size
    bold: bool
    chars: int


@dataclass
class Item:
    """A text block or a table on a page, before reading-order sorting."""

    bbox: tuple[float, float, float, float]
    lines: list[Line] = field(default_factory=list)
    table: PdfTable | None = None


def is_bold(span: TextSpan) -> bool:
    """Whether a MuPDF text span is bold (by its flags or its font name)."""
    font = span.get("font", "")
    return bool(span.get("flags", 0) & 16) or bool(re.search(r"bold|black|heavy|semibold|demi", font, re.I))


def _reads_left_to_right(d: Sequence[float]) -> bool:
    """Whether a line direction ``d`` (unit vector, y pointing down) runs within 30 degrees of left to right."""
    return abs(d[1]) <= 0.5 and d[0] >= 0


def upright_rotation(blocks: list[TextBlock], current: int = 0) -> int | None:
    """The page rotation (degrees clockwise, as PDF's ``/Rotate``: 0, 90, 180 or 270) under which most of a
    page's text reads left to right. ``blocks``: the blocks of MuPDF's text dict (``page.get_text("dict")``),
    whose lines and ``dir`` vectors are in the unrotated page's coordinates whatever the page's ``/Rotate``.
    Each line counts, by its non-blank characters, for the one rotation that turns its direction to within 30
    degrees of left to right (diagonal text counts for none); a tie keeps ``current`` (the page's own rotation).
    None when no line counts (no text, or diagonal text only)."""
    turns: dict[int, Callable[[float, float], tuple[float, float]]] = {
        0: lambda x, y: (x, y),
        90: lambda x, y: (-y, x),
        180: lambda x, y: (-x, -y),
        270: lambda x, y: (y, -x),
    }
    chars: Counter[int] = Counter()
    for b in blocks:
        if b.get("type") != 0:
            continue
        for line in b.get("lines", []):
            n = sum(len("".join(s.get("text", "").split())) for s in line.get("spans", []))
            dx, dy = line.get("dir", (1, 0))
            turn = next((r for r, f in turns.items() if _reads_left_to_right(f(dx, dy))), None)
            if n and turn is not None:
                chars[turn] += n
    if not chars:
        return None
    return max(chars, key=lambda r: (chars[r], r == current % 360))


def line_from(line: TextLine, rot: Matrix | None = None) -> Line | None:
    """A text line in display coordinates (``rot``: the page's rotation matrix when it is rotated, since
    MuPDF reports text in unrotated coordinates)."""
    d: Sequence[float] = line.get("dir", (1, 0))
    x0, y0, x1, y1 = line["bbox"]
    bbox = (x0, y0, x1, y1)
    if rot is not None:
        import pymupdf

        d = tuple(pymupdf.Point(d) * pymupdf.Matrix(rot.a, rot.b, rot.c, rot.d, 0, 0))
        bbox = tuple(pymupdf.Rect(bbox) * rot)
    if not _reads_left_to_right(d):  # vertical or upside-down text: margin stamps, rotated labels
        return None
    spans = [s for s in line.get("spans", []) if s.get("text")]
    text = "".join(s["text"] for s in spans)
    if not text.strip():
        return None
    weights = [(len(s["text"].strip()), s) for s in spans if s["text"].strip()]
    chars = sum(w for w, _ in weights)
    size = sum(w * s["size"] for w, s in weights) / chars
    bold = all(is_bold(s) for _, s in weights)
    return Line(text=text, bbox=bbox, size=size, bold=bold, chars=chars)


def inside(bbox: Sequence[float], rect: Sequence[float], pad: float = 1.0) -> bool:
    """Whether the centre of ``bbox`` lies in ``rect`` grown by ``pad`` points."""
    cx, cy = (bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2
    return rect[0] - pad <= cx <= rect[2] + pad and rect[1] - pad <= cy <= rect[3] + pad


def join_lines(texts: list[str]) -> str:
    """Lines of one paragraph -> one string; 'mainte-' + 'nance' -> 'maintenance'."""
    out = ""
    for t in texts:
        t = _WS.sub(" ", t).strip()
        if not t:
            continue
        if out.endswith("-") and len(out) > 1 and out[-2].isalpha() and t[0].islower():
            out = out[:-1] + t  # hyphenation
        elif out.endswith(("-", "–", "/")) and len(out) > 1 and out[-2].isalnum():
            out += t  # '737–' + '9', 'https://' + 'www…': the break was inside a token
        elif out:
            out += " " + t
        else:
            out = t
    return out


def reading_order(items: list[Item]) -> list[Item]:
    """Bands separated by full-width items; inside a band, columns left to right, each top to bottom."""
    if len(items) < 2:
        return items
    x0 = min(i.bbox[0] for i in items)
    x1 = max(i.bbox[2] for i in items)
    width = max(x1 - x0, 1.0)
    items = sorted(items, key=lambda i: (i.bbox[1], i.bbox[0]))
    out: list[Item] = []
    band: list[Item] = []

    def flush() -> None:
        columns: list[list[Item]] = []
        for it in sorted(band, key=lambda i: i.bbox[0]):
            for col in columns:
                cx0, cx1 = min(c.bbox[0] for c in col), max(c.bbox[2] for c in col)
                overlap = min(cx1, it.bbox[2]) - max(cx0, it.bbox[0])
                if overlap > 0.5 * min(it.bbox[2] - it.bbox[0], cx1 - cx0):
                    col.append(it)
                    break
            else:
                columns.append([it])
        columns.sort(key=lambda col: min(c.bbox[0] for c in col))
        for col in columns:
            out.extend(sorted(col, key=lambda i: (i.bbox[1], i.bbox[0])))
        band.clear()

    for it in items:
        if (it.bbox[2] - it.bbox[0]) >= 0.6 * width:
            flush()
            out.append(it)
        else:
            band.append(it)
    flush()
    return out


def in_margin(it: Item, rect: Rect) -> bool:
    """A text item entirely in the top or bottom MARGIN of the page."""
    top, bottom = rect.y0 + MARGIN * rect.height, rect.y1 - MARGIN * rect.height
    return it.table is None and (it.bbox[3] < top or it.bbox[1] > bottom)


def norm_key(text: str) -> str:
    """The text a running header or footer is recognised by: whitespace collapsed, lower case, digits as '#'."""
    return re.sub(r"\d+", "#", _WS.sub(" ", text).strip().lower())


__all__ = [
    "MARGIN",
    "Item",
    "Line",
    "PdfTable",
    "TextBlock",
    "TextDict",
    "TextLine",
    "TextSpan",
    "in_margin",
    "inside",
    "is_bold",
    "join_lines",
    "line_from",
    "norm_key",
    "reading_order",
    "upright_rotation",
]
