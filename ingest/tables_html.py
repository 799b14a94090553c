"""HTML ``<table>`` -> Markdown: the cell grid with ``colspan`` cells repeated and ``rowspan`` cells carried
down, header rows from ``<th>``/``<thead>`` (else the layout, see ``kbgraph.ingest.tables.grid_to_markdown``),
the ``<caption>`` as the caption.

- ``html_tables(page_html)``: every top-level table of a page as (key, markdown), the key being the cells'
  text without white space, so a table found by another parser (``unstructured``'s Table element, whose
  ``text_as_html`` drops ``colspan``) can be matched to its original markup;
- ``html_table_to_markdown(html)``: the first table's Markdown;
- ``html_table_to_rows(html)``: the first table's expanded grid and its count of marked header rows.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from kbgraph.ingest.tables import grid_to_markdown

_WS = re.compile(r"\s+")


class _TableHTML(HTMLParser):
    """The top-level tables of an HTML text: ``tables[i]`` = rows of (text, colspan, rowspan, header) for the
    first-level cells (header: a ``<th>`` or any cell inside ``<thead>``), ``captions[i]`` its ``<caption>``.
    Nested tables are flattened into their parent cell's text; text outside tables is ignored."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[list[tuple[str, int, int, bool]]]] = []
        self.captions: list[str] = []
        self._cell: list[str] | None = None
        self._caption: list[str] | None = None
        self._span = (1, 1, False)
        self._depth = 0
        self._thead = False

    @staticmethod
    def _int(value: str | None) -> int:
        try:
            return max(1, min(int(value or 1), 1000))
        except ValueError:
            return 1

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._depth += 1
            if self._depth == 1:
                self.tables.append([])
                self.captions.append("")
                self._thead = False
            elif self._cell is not None:
                self._cell.append(" ")
        elif self._depth == 0:
            return
        elif self._depth > 1:  # a nested table: its cells are words of the parent cell
            if self._cell is not None and tag in ("tr", "td", "th", "br", "p", "div", "li"):
                self._cell.append(" ")
        elif tag == "caption":
            self._caption = []
        elif tag == "thead":
            self._thead = True
        elif tag in ("tbody", "tfoot"):
            self._thead = False
        elif tag == "tr":
            self._close_cell()
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            a = dict(attrs)
            self._close_cell()
            if not self.tables[-1]:
                self.tables[-1].append([])
            self._cell = []
            self._span = (self._int(a.get("colspan")), self._int(a.get("rowspan")), tag == "th" or self._thead)
        elif tag in ("br", "p", "div", "li") and self._cell is not None:
            self._cell.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            if self._depth == 1:
                self._close_cell()
            self._depth = max(0, self._depth - 1)
        elif self._depth != 1:
            return
        elif tag in ("td", "th", "tr"):
            self._close_cell()
        elif tag == "thead":
            self._thead = False
        elif tag == "caption" and self._caption is not None:
            self.captions[-1] = _WS.sub(" ", "".join(self._caption)).strip()
            self._caption = None

    def handle_data(self, data: str) -> None:
        if self._caption is not None:
            self._caption.append(data)
        elif self._cell is not None:
            self._cell.append(data)

    def _close_cell(self) -> None:
        if self._cell is not None:
            colspan, rowspan, th = self._span
            self.tables[-1][-1].append((_WS.sub(" ", "".join(self._cell)).strip(), colspan, rowspan, th))
            self._cell = None


def _expand(raw: list[list[tuple[str, int, int, bool]]]) -> tuple[list[list[str]], list[bool], list[list[bool]]]:
    """(grid, marked, spanned) of one table's rows: ``colspan`` cells repeated and ``rowspan`` cells carried
    down (a row label spanning rows stays with each row), ``marked[i]`` when row i is a header row (all its
    own cells ``<th>`` or in ``<thead>``), ``spanned[i][j]`` when cell (i, j) repeats its left neighbour by
    ``colspan``. Rows without text are left out."""
    grid: list[list[str]] = []
    heads: list[bool] = []
    spans: list[list[bool]] = []
    carry: dict[int, tuple[str, int, bool]] = {}  # column -> (text, rows still covered, spanned) from rowspan
    for cells_in in raw:
        row: list[str] = []
        span: list[bool] = []
        col = 0
        cells = list(cells_in)
        all_th = bool(cells) and all(c[3] for c in cells)
        while cells or col in carry:
            if col in carry:
                text, left, sp = carry[col]
                row.append(text)
                span.append(sp)
                if left <= 1:
                    del carry[col]
                else:
                    carry[col] = (text, left - 1, sp)
                col += 1
                continue
            text, colspan, rowspan, _ = cells.pop(0)
            for k in range(colspan):
                row.append(text)
                span.append(k > 0)
                if rowspan > 1:
                    carry[col + k] = (text, rowspan - 1, k > 0)
            col += colspan
        if any(c for c in row):
            grid.append(row)
            heads.append(all_th)
            spans.append(span)
    return grid, heads, spans


def html_table_to_rows(html: str) -> tuple[list[list[str]], int]:
    """The grid of the first HTML table in ``html`` (spans expanded) and how many leading rows are marked
    as header rows (all ``<th>``, or inside ``<thead>``)."""
    parser = _TableHTML()
    parser.feed(html)
    parser.close()
    if not parser.tables:
        return [], 0
    grid, heads, _spanned = _expand(parser.tables[0])
    n = 0
    while n < len(heads) and heads[n]:
        n += 1
    return grid, n


def html_table_to_markdown(html: str) -> str:
    """Markdown for the first table of ``html`` (``grid_to_markdown`` on its expanded grid; its
    ``<caption>``, if any, is the caption). Returns '' for a table without text."""
    tables = html_tables(html)
    return tables[0][1] if tables else ""


def html_tables(html: str) -> list[tuple[str, str]]:
    """Every top-level table of an HTML page, in document order, as (key, markdown): ``key`` is the table's
    cell text with all white space removed (for matching a table that another parser found, e.g.
    ``unstructured``'s Table element, whose text is its cells' text), ``markdown`` from ``grid_to_markdown``
    ('' for a table without text)."""
    parser = _TableHTML()
    parser.feed(html)
    parser.close()
    out = []
    for raw, caption in zip(parser.tables, parser.captions, strict=True):
        grid, marked, spanned = _expand(raw)
        key = "".join("".join(c[0] for c in row) for row in raw)
        out.append((_WS.sub("", key), grid_to_markdown(grid, marked, caption or None, spanned)))
    return out
