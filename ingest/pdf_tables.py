"""PDF tables rebuilt from ruling lines and the page's words (kbgraph.ingest.parse_pdf; PIKE-RAG §5.1.1,
§5.2.2: a table keeps its rows, header and caption).

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
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from typing import TYPE_CHECKING, TypedDict, TypeVar

from kbgraph.ingest.pdf_layout import PdfTable, inside, join_lines
from kbgraph.ingest.tables import normalize_signs

if TYPE_CHECKING:
    from pymupdf import Page
    from pymupdf.table import Table, TableRow

#: A word of ``page.get_text("words")``: x0, y0, x1, y1, text, then block, line and word numbers.
Word = tuple[float, float, float, float, str, *tuple[int, ...]]
#: A word of a table followed by its index in the table's words.
IndexedWord = tuple[float, float, float, float, str, *tuple[int, ...], int]
W = TypeVar("W", bound=Word)
#: A phrase of a printed line: (its column, the first and last column of its cell, its words).
Phrase = tuple[int, int, int, list[IndexedWord]]


class _PrintedLine(TypedDict):
    """A printed line of a grid row: its phrases and, per column, their text."""

    phrases: list[Phrase]
    cols: dict[int, str]


class _GridRow(TypedDict):
    """A grid row of the table: its printed lines, whether one cell spans the whole width, its cells' spans."""

    lines: list[_PrintedLine]
    full: bool
    spans: list[tuple[int, int]]


_NUMERIC_CELL = re.compile(r"^[\s$€£¥(+\-–]*\d[\d\s.,:/\-–]*[%)]?\s*$")


def _phrases(words: list[W]) -> list[list[W]]:
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


def _cluster_lines(words: list[W]) -> list[list[W]]:
    """Group words into printed lines by vertical centre; each line sorted left to right."""
    if not words:
        return []
    ws = sorted(words, key=lambda w: ((w[1] + w[3]) / 2, w[0]))
    h = statistics.median([w[3] - w[1] for w in ws]) or 1.0
    lines: list[list[W]] = [[ws[0]]]
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


def _text(ws: list[IndexedWord]) -> str:
    return " ".join(w[4] for w in ws)


def extract_table(tb: Table, page_words: list[Word]) -> PdfTable | None:
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
    words: list[Word] = [(*w[:4], normalize_signs(w[4]), *w[5:]) for w in page_words if inside(w[:4], bbox, pad=0.5)]
    if not words:
        return None
    grid = _grid_rows(rows, words, starts, ncols)
    if not grid:
        return None
    caption_lines: list[str] = []
    notes: list[str] = []
    while grid and _is_prose(grid[0]):
        caption_lines += [_text(pl["phrases"][0][3]) for pl in grid.pop(0)["lines"]]
    while grid and _is_prose(grid[-1]):
        notes.insert(0, join_lines([_text(pl["phrases"][0][3]) for pl in grid.pop()["lines"]]))
    if not grid:
        return None
    header = _header(grid, ncols)  # (takes the header rows off the grid)
    body = _body(grid, ncols)
    # Drop columns that are empty everywhere (grid artefacts), keeping the header aligned.
    keep = [j for j in range(ncols) if any(r[j] for r in body) or (header and header[j].strip())]
    body = [[r[j] for j in keep] for r in body]
    if header is not None:
        header = [header[j] for j in keep]
    if not body and header is None:
        return None
    return {
        "caption": join_lines(caption_lines) or None,
        "header": header,
        "rows": body,
        "notes": notes,
        "ncols": len(keep),
    }


def _grid_rows(rows: list[TableRow], words: list[Word], starts: list[float], ncols: int) -> list[_GridRow]:
    """Each grid row: its cells as (first column, last column, word indices), words taken by cell (a word belongs
    to the first cell containing its centre), cut into printed lines; a line is its phrases, each phrase
    tagged with its column (clamped to its cell's span). Rows without cells or words are left out."""
    used: set[int] = set()
    grid: list[_GridRow] = []
    for r in rows:
        cells: list[tuple[int, int, list[int]]] = []
        y0, y1 = r.bbox[1] - 0.5, r.bbox[3] + 0.5
        in_row = [k for k, w in enumerate(words) if k not in used and y0 <= (w[1] + w[3]) / 2 <= y1]
        for c in r.cells[:ncols]:
            if c is None:
                continue
            span = [j for j in range(ncols) if c[0] - 0.5 <= starts[j] < c[2] - 0.5] or [_col_of(c[0], starts)]
            cw = [k for k in in_row if k not in used and inside(words[k][:4], c, pad=0.5)]
            used.update(cw)
            cells.append((span[0], span[-1], cw))
        if not cells:
            continue
        owner = {k: (a, b) for a, b, cw in cells for k in cw}
        indexed: list[IndexedWord] = [words[k] + (k,) for k in sorted(owner)]
        plines = [_printed_line(line, owner, starts) for line in _cluster_lines(indexed)]
        if plines:
            full = len(cells) == 1 and cells[0][0] == 0 and cells[0][1] == ncols - 1
            grid.append({"lines": plines, "full": full, "spans": [(a, b) for a, b, _ in cells]})
    return grid


def _printed_line(line: list[IndexedWord], owner: dict[int, tuple[int, int]], starts: list[float]) -> _PrintedLine:
    """A printed line of a grid row: its phrases per cell (``owner``: {word index: its cell's columns}), each
    tagged with its column, and the text per column."""
    phrases: list[Phrase] = []  # (col, a, b, words)
    for a, b in dict.fromkeys(owner[w[-1]] for w in line):
        for p in _phrases([w for w in line if owner[w[-1]] == (a, b)]):
            col = min(max(_col_of((p[0][0] + p[-1][2]) / 2, starts), a), b)
            phrases.append((col, a, b, p))
    cols: dict[int, list[str]] = defaultdict(list)
    for col, _, _, p in sorted(phrases, key=lambda x: x[3][0][0]):
        cols[col].append(_text(p))
    return {"phrases": phrases, "cols": {j: " ".join(v) for j, v in cols.items()}}


def _is_prose(g: _GridRow) -> bool:
    """A full-width row whose every printed line is one phrase: caption or notes."""
    return g["full"] and all(len(pl["phrases"]) == 1 for pl in g["lines"])


def _cells_of(g: _GridRow) -> dict[int, str]:
    out: dict[int, list[str]] = defaultdict(list)
    for pl in g["lines"]:
        for j, t in pl["cols"].items():
            out[j].append(t)
    return {j: " ".join(v) for j, v in out.items()}


def _header_like(g: _GridRow) -> bool:
    vals = [t for t in _cells_of(g).values() if t.strip()]
    return bool(vals) and not any(_NUMERIC_CELL.match(t) for t in vals)


def _header(grid: list[_GridRow], ncols: int) -> list[str] | None:
    """The header of the table (None: it has none), its rows taken off the front of ``grid``: a leading non-numeric
    row, plus up to two more non-numeric rows with empty cells. A group label spanning several columns is
    prefixed to each ('Pre-Pawn Handgun')."""
    header_rows: list[_GridRow] = []
    if len(grid) > 1 and _header_like(grid[0]):
        header_rows.append(grid.pop(0))
        while len(grid) > 1 and len(header_rows) < 3 and _header_like(grid[0]) and len(_cells_of(grid[0])) < ncols:
            header_rows.append(grid.pop(0))
    if not header_rows:
        return None
    labels: list[list[str]] = [[] for _ in range(ncols)]
    for g in header_rows:
        for pl in g["lines"]:
            by_cell: dict[tuple[int, int], list[tuple[int, list[IndexedWord]]]] = defaultdict(list)
            for col, a, b, p in pl["phrases"]:
                by_cell[(a, b)].append((col, p))
            for (a, b), phr in by_cell.items():
                col_ids = [c for c, _ in phr]
                if b > a and (len(phr) == 1 or len(set(col_ids)) < len(col_ids)):
                    for j in range(a, b + 1):  # a group label over the whole span
                        labels[j].append(" ".join(_text(p) for _, p in phr))
                else:
                    for c, p in phr:
                        labels[c].append(_text(p))
    return [" ".join(x) for x in labels]


def _body(grid: list[_GridRow], ncols: int) -> list[list[str]]:
    """The table's rows of ``ncols`` cells: a printed line starts a new row when it has text in the row's key
    (leftmost) column and in at least half as many columns as the row's first line; other lines continue the row
    above (wrapped cells). Empty rows are left out."""
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
            row = [join_lines(rec.get(j, [])) for j in range(ncols)]
            if any(c.strip() for c in row):
                body.append(row)
    return body


def may_have_table(page: Page) -> bool:
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


__all__ = ["extract_table", "may_have_table"]
