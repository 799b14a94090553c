"""PDF -> elements with PyMuPDF (PIKE-RAG §5.1.1: text, headings and tables of a paged document).

What it does, page by page:

- **Tables**: ``page.find_tables(use_layout=False)`` (ruling-line detection; the pymupdf 2 layout model is
  10x slower and found the same tables on every test document). The cell *grid* is taken from it, but the
  cell *text* is rebuilt from the page's words: a grid row often holds several printed rows (the FBI NICS
  report draws a rule every five states, so one grid cell holds five states), and pymupdf's own cell text
  mangles spacing and thousands separators. Words are assigned to columns by position, grid rows are cut
  into printed lines, and a line starts a new table row when it has text in the row's key (leftmost)
  column and in at least half as many columns as the row's first line; other lines continue the row above
  (wrapped cells). Full-width single-phrase rows at the top are the caption, at the bottom notes (emitted
  as text). Header rows (no numeric cell) are composed column by column, a group label spanning several
  columns prefixed to each ('Pre-Pawn Handgun'). A table without a header row that continues a table of
  the previous page with as many columns reuses that table's header. Lines inside a table are not text.
  Minus signs in cells are '-': U+2212, and a dash or U+FFFD (a font glyph without a Unicode mapping,
  typically the minus) directly before a number (``kbgraph.ingest.tables.normalize_signs``).
- **Text**: MuPDF's blocks and lines; vertical text, repeated page headers/footers (same text, digits
  ignored, in the top or bottom 10% of at least half the pages) and number-only blocks (page and line
  numbers) are dropped; line-end hyphenation before a lower-case letter is undone.
- **Headings**: from span statistics. The body style is the font size covering the most characters; a
  block of at most three lines whose every line is larger (>= body + 1 pt) or bold at body size (when the
  body is not bold) is a heading; a block that starts with such lines and continues as body text is split.
  Heading levels rank the heading styles in use (larger first, bold before regular at one size).
- **Reading order**: per page, items are cut into horizontal bands at full-width items; inside a band,
  narrow items are grouped into columns by horizontal overlap and read column by column, top to bottom.
- A paragraph broken by a page break (no final punctuation, next page starts lower-case) is re-joined.
"""

from __future__ import annotations

import logging
import os
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from kbgraph.errors import IngestError
from kbgraph.ingest.tables import normalize_signs, rows_to_markdown

log = logging.getLogger(__name__)

os.environ.setdefault("PYMUPDF_SUGGEST_LAYOUT_ANALYZER", "0")

_WS = re.compile(r"\s+")
_NUMBER_ONLY = re.compile(r"^[\W_]*(page\s*)?\d{1,5}(\s*(of|/)\s*\d{1,5})?[\W_]*$", re.I)
_NUMERIC_CELL = re.compile(r"^[\s$€£¥(+\-–]*\d[\d\s.,:/\-–]*[%)]?\s*$")
#: Metadata titles that are file names or placeholders, not titles.
_JUNK_TITLE = re.compile(r"(\.(exe|docx?|pdf|tmp|indd|qxd|qxp|rtf|txt|xlsx?|pptx?|dvi|ps|tex)$)|^untitled\b", re.I)
MARGIN = 0.10  # top/bottom fraction of the page where running headers/footers live
MAX_HEADING_LINES = 3
MAX_HEADING_CHARS = 200


@dataclass
class _Line:
    text: str
    bbox: tuple[float, float, float, float]
    size: float  # character-weighted mean span size
    bold: bool
    chars: int


@dataclass
class _Item:
    """A text block or a table on a page, before reading-order sorting."""

    bbox: tuple[float, float, float, float]
    lines: list[_Line] = field(default_factory=list)
    table: dict | None = None  # {'caption','header','rows','notes','ncols'}


def _one_line(msg: Any) -> str:
    text = _WS.sub(" ", str(msg)).strip()
    return text[:200] if text else "unknown error"


def open_pdf(data: bytes, name: str):
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
        raise IngestError(f"corrupt or unreadable PDF {name}: {_one_line(exc)}") from exc
    if doc.needs_pass and not doc.authenticate(""):
        doc.close()
        raise IngestError(f"password-protected PDF {name}: remove the password (or decrypt it) and ingest it again")
    if doc.page_count == 0:
        doc.close()
        raise IngestError(f"corrupt PDF {name}: no pages could be read")
    return doc


def _is_bold(span: dict) -> bool:
    font = span.get("font", "")
    return bool(span.get("flags", 0) & 16) or bool(re.search(r"bold|black|heavy|semibold|demi", font, re.I))


def _line_from(line: dict, rot=None) -> _Line | None:
    """A text line in display coordinates (``rot``: the page's rotation matrix when it is rotated, since
    MuPDF reports text in unrotated coordinates)."""
    d = line.get("dir", (1, 0))
    bbox = tuple(line["bbox"])
    if rot is not None:
        import pymupdf

        d = tuple(pymupdf.Point(d) * pymupdf.Matrix(rot.a, rot.b, rot.c, rot.d, 0, 0))
        bbox = tuple(pymupdf.Rect(bbox) * rot)
    if abs(d[1]) > 0.5 or d[0] < 0:  # vertical or upside-down text: margin stamps, rotated labels
        return None
    spans = [s for s in line.get("spans", []) if s.get("text")]
    text = "".join(s["text"] for s in spans)
    if not text.strip():
        return None
    weights = [(len(s["text"].strip()), s) for s in spans if s["text"].strip()]
    chars = sum(w for w, _ in weights)
    size = sum(w * s["size"] for w, s in weights) / chars
    bold = all(_is_bold(s) for _, s in weights)
    return _Line(text=text, bbox=bbox, size=size, bold=bold, chars=chars)


def _inside(bbox, rect, pad: float = 1.0) -> bool:
    cx, cy = (bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2
    return rect[0] - pad <= cx <= rect[2] + pad and rect[1] - pad <= cy <= rect[3] + pad


def _join_lines(texts: list[str]) -> str:
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


# --- tables -------------------------------------------------------------------------------------------


def _phrases(words: list[tuple]) -> list[list[tuple]]:
    """Split one printed line (words sorted by x) into phrases at gaps wider than ~0.8 word height."""
    if not words:
        return []
    h = statistics.median([w[3] - w[1] for w in words]) or 1.0
    out = [[words[0]]]
    for prev, w in zip(words, words[1:]):
        if w[0] - prev[2] > 0.8 * h:
            out.append([w])
        else:
            out[-1].append(w)
    return out


def _cluster_lines(words: list[tuple]) -> list[list[tuple]]:
    """Group words into printed lines by vertical centre; each line sorted left to right."""
    if not words:
        return []
    ws = sorted(words, key=lambda w: ((w[1] + w[3]) / 2, w[0]))
    h = statistics.median([w[3] - w[1] for w in ws]) or 1.0
    lines: list[list[tuple]] = [[ws[0]]]
    centre = (ws[0][1] + ws[0][3]) / 2
    for w in ws[1:]:
        c = (w[1] + w[3]) / 2
        if abs(c - centre) <= 0.45 * h:
            lines[-1].append(w)
            centre = statistics.fmean((x[1] + x[3]) / 2 for x in lines[-1])
        else:
            lines.append([w])
            centre = c
    return [sorted(line, key=lambda w: w[0]) for line in lines]


def _col_of(x: float, starts: list[float]) -> int:
    col = 0
    for j, s in enumerate(starts):
        if x >= s - 0.5:
            col = j
    return col


def _text(ws: list[tuple]) -> str:
    return " ".join(w[4] for w in ws)


def _extract_table(tb, page_words: list[tuple]) -> dict | None:
    """Rebuild one pymupdf table from the page's words; see the module docstring. None if not a table."""
    rows = tb.rows
    ncols = tb.col_count
    if ncols < 2 or len(rows) < 1:
        return None
    bbox = tuple(tb.bbox)
    # Column starts: the left edge of cells that begin in each grid column.
    starts: list[float] = []
    for j in range(ncols):
        xs = [r.cells[j][0] for r in rows if j < len(r.cells) and r.cells[j] is not None]
        starts.append(min(xs) if xs else (starts[-1] + 1 if starts else bbox[0]))
    # minus signs first (U+2212, a dash or an unmapped glyph U+FFFD before a number -> '-'), so a row of
    # negative numbers reads as numeric, not as a header
    words = [w[:4] + (normalize_signs(w[4]),) + tuple(w[5:]) for w in page_words if _inside(w[:4], bbox, pad=0.5)]
    if not words:
        return None

    # Each grid row: its cells as (first column, last column, word indices), words taken by cell (a word belongs
    # to the first cell containing its centre), cut into printed lines; a line is its phrases, each phrase
    # tagged with its column (clamped to its cell's span).
    used: set[int] = set()
    grid: list[dict] = []
    for r in rows:
        cells = []
        y0, y1 = r.bbox[1] - 0.5, r.bbox[3] + 0.5
        in_row = [k for k, w in enumerate(words) if k not in used and y0 <= (w[1] + w[3]) / 2 <= y1]
        for c in r.cells[:ncols]:
            if c is None:
                continue
            span = [j for j in range(ncols) if c[0] - 0.5 <= starts[j] < c[2] - 0.5] or [_col_of(c[0], starts)]
            cw = [k for k in in_row if k not in used and _inside(words[k][:4], c, pad=0.5)]
            used.update(cw)
            cells.append((span[0], span[-1], cw))
        if not cells:
            continue
        owner = {k: (a, b) for a, b, cw in cells for k in cw}
        row_words = sorted(owner)
        plines = []
        for line in _cluster_lines([words[k] + (k,) for k in row_words]):
            phrases: list[tuple[int, int, int, list[tuple]]] = []  # (col, a, b, words)
            for a, b in dict.fromkeys(owner[w[-1]] for w in line):
                for p in _phrases([w for w in line if owner[w[-1]] == (a, b)]):
                    col = min(max(_col_of((p[0][0] + p[-1][2]) / 2, starts), a), b)
                    phrases.append((col, a, b, p))
            cols: dict[int, list[str]] = defaultdict(list)
            for col, _, _, p in sorted(phrases, key=lambda x: x[3][0][0]):
                cols[col].append(_text(p))
            plines.append({"phrases": phrases, "cols": {j: " ".join(v) for j, v in cols.items()}})
        if plines:
            full = len(cells) == 1 and cells[0][0] == 0 and cells[0][1] == ncols - 1
            grid.append({"lines": plines, "full": full, "spans": [(a, b) for a, b, _ in cells]})
    if not grid:
        return None

    def is_prose(g) -> bool:  # a full-width row whose every printed line is one phrase: caption or notes
        return g["full"] and all(len(pl["phrases"]) == 1 for pl in g["lines"])

    caption_lines: list[str] = []
    notes: list[str] = []
    while grid and is_prose(grid[0]):
        caption_lines += [_text(pl["phrases"][0][3]) for pl in grid.pop(0)["lines"]]
    while grid and is_prose(grid[-1]):
        notes.insert(0, _join_lines([_text(pl["phrases"][0][3]) for pl in grid.pop()["lines"]]))
    if not grid:
        return None

    def cells_of(g) -> dict[int, str]:
        out: dict[int, list[str]] = defaultdict(list)
        for pl in g["lines"]:
            for j, t in pl["cols"].items():
                out[j].append(t)
        return {j: " ".join(v) for j, v in out.items()}

    def header_like(g) -> bool:
        vals = [t for t in cells_of(g).values() if t.strip()]
        return bool(vals) and not any(_NUMERIC_CELL.match(t) for t in vals)

    # Header rows: a leading non-numeric row, plus up to two more non-numeric rows with empty cells.
    header_rows: list[dict] = []
    if len(grid) > 1 and header_like(grid[0]):
        header_rows.append(grid.pop(0))
        while len(grid) > 1 and len(header_rows) < 3 and header_like(grid[0]) and len(cells_of(grid[0])) < ncols:
            header_rows.append(grid.pop(0))
    header: list[str] | None = None
    if header_rows:
        labels: list[list[str]] = [[] for _ in range(ncols)]
        for g in header_rows:
            for pl in g["lines"]:
                by_cell: dict[tuple[int, int], list] = defaultdict(list)
                for col, a, b, p in pl["phrases"]:
                    by_cell[(a, b)].append((col, p))
                for (a, b), phr in by_cell.items():
                    cols = [c for c, _ in phr]
                    if b > a and (len(phr) == 1 or len(set(cols)) < len(cols)):
                        for j in range(a, b + 1):  # a group label over the whole span
                            labels[j].append(" ".join(_text(p) for _, p in phr))
                    else:
                        for c, p in phr:
                            labels[c].append(_text(p))
        header = [" ".join(x) for x in labels]

    body: list[list[str]] = []
    for g in grid:
        lines = g["lines"]
        key = min(lines[0]["cols"]) if lines[0]["cols"] else 0
        first_filled = len(lines[0]["cols"])
        records: list[dict[int, list[str]]] = []
        for k, pl in enumerate(lines):
            starts_row = k == 0 or (key in pl["cols"] and len(pl["cols"]) >= max(2, first_filled / 2))
            if starts_row:
                records.append(defaultdict(list))
            for j, t in pl["cols"].items():
                records[-1][j].append(t)
        for rec in records:
            row = [_join_lines(rec.get(j, [])) for j in range(ncols)]
            if any(c.strip() for c in row):
                body.append(row)
    # Drop columns that are empty everywhere (grid artefacts), keeping the header aligned.
    keep = [j for j in range(ncols) if any(r[j] for r in body) or (header and header[j].strip())]
    body = [[r[j] for j in keep] for r in body]
    if header is not None:
        header = [header[j] for j in keep]
    if not body and header is None:
        return None
    return {
        "caption": _join_lines(caption_lines) or None,
        "header": header,
        "rows": body,
        "notes": notes,
        "ncols": len(keep),
    }


# --- reading order -------------------------------------------------------------------------------------


def _reading_order(items: list[_Item]) -> list[_Item]:
    """Bands separated by full-width items; inside a band, columns left to right, each top to bottom."""
    if len(items) < 2:
        return items
    x0 = min(i.bbox[0] for i in items)
    x1 = max(i.bbox[2] for i in items)
    width = max(x1 - x0, 1.0)
    items = sorted(items, key=lambda i: (i.bbox[1], i.bbox[0]))
    out: list[_Item] = []
    band: list[_Item] = []

    def flush() -> None:
        columns: list[list[_Item]] = []
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


# --- the document --------------------------------------------------------------------------------------


def _in_margin(it: _Item, rect) -> bool:
    """A text item entirely in the top or bottom MARGIN of the page."""
    top, bottom = rect.y0 + MARGIN * rect.height, rect.y1 - MARGIN * rect.height
    return it.table is None and (it.bbox[3] < top or it.bbox[1] > bottom)


def _norm_key(text: str) -> str:
    return re.sub(r"\d+", "#", _WS.sub(" ", text).strip().lower())


def parse_pdf(data: bytes, name: str) -> tuple[str | None, list[dict]]:
    """(title or None, elements as dicts {kind, text, level, page, markdown}) of a PDF."""
    import pymupdf

    doc = open_pdf(data, name)
    try:
        return _parse(doc, name, pymupdf)
    finally:
        doc.close()


def _parse(doc, name: str, pymupdf) -> tuple[str | None, list[dict]]:
    flags = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP
    pages: list[tuple[int, Any, list[_Item]]] = []
    bad_pages = 0
    for page in doc:
        try:
            pages.append((page.number + 1, page.rect, _page_items(page, flags)))
        except Exception as exc:  # one broken page must not lose the document
            bad_pages += 1
            log.warning("%s: page %d skipped: %s", name, page.number + 1, _one_line(exc))
    if not pages:
        raise IngestError(f"corrupt PDF {name}: no page could be read")

    # Running headers/footers: same text (digits ignored) in the margins of at least half the pages.
    repeated: set[str] = set()
    if len(pages) >= 2:
        seen: Counter[str] = Counter()
        for _, rect, items in pages:
            keys = {_norm_key(" ".join(ln.text for ln in it.lines)) for it in items if _in_margin(it, rect)}
            seen.update(keys)
        repeated = {k for k, n in seen.items() if n >= max(2, len(pages) / 2)}

    # Body style and heading styles from span statistics.
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

    def heading_style(ln: _Line) -> tuple[float, bool] | None:
        size = round(ln.size * 2) / 2
        if size >= body_size + 1.0:
            return (size, ln.bold)
        if ln.bold and not body_bold and size >= body_size - 0.5:
            return (size, True)
        return None

    raw: list[dict] = []  # {kind, text, page, style?, table?}
    for pno, rect, items in pages:
        for it in _reading_order(items):
            if it.table is not None:
                raw.append({"kind": "table", "page": pno, "table": it.table})
                for note in it.table["notes"]:
                    raw.append({"kind": "text", "page": pno, "text": note})
                continue
            text_all = " ".join(ln.text for ln in it.lines)
            if _in_margin(it, rect) and _norm_key(text_all) in repeated:
                continue
            if _NUMBER_ONLY.match(text_all.strip()):
                continue
            styles = [heading_style(ln) for ln in it.lines]
            n_head = 0
            while n_head < len(styles) and styles[n_head] is not None and styles[n_head] == styles[0]:
                n_head += 1
            head_text = _join_lines([ln.text for ln in it.lines[:n_head]])
            if (
                0 < n_head <= MAX_HEADING_LINES
                and len(head_text) <= MAX_HEADING_CHARS
                and sum(ch.isalpha() for ch in head_text) >= 2
            ):
                raw.append({"kind": "heading", "page": pno, "text": head_text, "style": styles[0]})
                rest = it.lines[n_head:]
            else:
                rest = it.lines
            body = _join_lines([ln.text for ln in rest])
            if body:
                raw.append({"kind": "text", "page": pno, "text": body})

    # Heading levels: rank the styles in use.
    styles_used = sorted({r["style"] for r in raw if r["kind"] == "heading"}, key=lambda s: (-s[0], not s[1]))
    level_of = {s: min(i + 1, 6) for i, s in enumerate(styles_used)}

    elements: list[dict] = []
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
            last["text"] = _join_lines([last["text"], text])
            continue
        elements.append({"kind": "text", "text": text, "level": None, "page": r["page"]})

    title = (doc.metadata or {}).get("title") or ""
    title = _WS.sub(" ", title).strip()
    title = re.sub(r"^microsoft (word|powerpoint) - ", "", title, flags=re.I)
    if not title or _JUNK_TITLE.search(title) or len(title) > 300:
        title = ""
    if not title and not any(e["kind"] == "heading" for e in elements):  # a one-table report: its caption
        cap = next((r["table"]["caption"] for r in raw if r["kind"] == "table" and r["page"] == 1), None)
        title = cap or ""
    if bad_pages:
        log.warning("%s: %d of %d pages could not be read", name, bad_pages, doc.page_count)
    return (title or None), elements


def _may_have_table(page) -> bool:
    """Ruling-line table detection needs at least two horizontal and two vertical edges: skip the (costly)
    detector on pages without them (a two-column page with only a column rule, say)."""
    h = v = 0
    for drawing in page.get_cdrawings():
        for item in drawing.get("items", ()):
            op = item[0]
            if op == "l":
                (x0, y0), (x1, y1) = item[1], item[2]
                h += abs(y0 - y1) < 1
                v += abs(x0 - x1) < 1
            elif op in ("re", "qu"):
                r = item[1]
                w, ht = (abs(r[2] - r[0]), abs(r[3] - r[1])) if op == "re" else (2 * 3, 2 * 3)
                h += 1 if ht <= 3 else (0 if w <= 3 else 2)
                v += 1 if w <= 3 else (0 if ht <= 3 else 2)
        if h >= 2 and v >= 2:
            return True
    return False


def _page_items(page, flags: int) -> list[_Item]:
    items: list[_Item] = []
    tables: list[dict] = []
    rects: list[tuple] = []
    try:
        candidates = list(page.find_tables(use_layout=False).tables) if _may_have_table(page) else []
    except Exception as exc:  # table detection is best effort; the text is still read
        log.warning("page %d: table detection failed: %s", page.number + 1, _one_line(exc))
        candidates = []
    rot = page.rotation_matrix if page.rotation % 360 else None
    if candidates:
        words = page.get_text("words", flags=flags)
        if rot is not None:  # tables come in display coordinates, words in unrotated ones
            import pymupdf

            words = [tuple(pymupdf.Rect(w[:4]) * rot) + tuple(w[4:]) for w in words]
        for tb in candidates:
            t = _extract_table(tb, words)
            if t is None or (len(t["rows"]) + (1 if t["header"] else 0)) < 2:
                continue
            tables.append(t)
            rects.append(tuple(tb.bbox))
            items.append(_Item(bbox=tuple(tb.bbox), table=t))
    d = page.get_text("dict", flags=flags)
    for b in d.get("blocks", []):
        if b.get("type") != 0:
            continue
        lines = []
        for raw in b.get("lines", []):
            ln = _line_from(raw, rot)
            if ln is None or any(_inside(ln.bbox, r) for r in rects):
                continue
            lines.append(ln)
        if lines:
            x0 = min(ln.bbox[0] for ln in lines)
            y0 = min(ln.bbox[1] for ln in lines)
            x1 = max(ln.bbox[2] for ln in lines)
            y1 = max(ln.bbox[3] for ln in lines)
            items.append(_Item(bbox=(x0, y0, x1, y1), lines=lines))
    return items


