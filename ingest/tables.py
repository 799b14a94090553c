"""Tables as Markdown, and their deterministic summary (PIKE-RAG §5.1.1 asks for a summary of each table;
this one needs no LLM, so ingestion without a model still describes every table chunk).

- ``rows_to_markdown(header, rows, caption=None)``: a GitHub-style pipe table (cells escaped, one line each);
- ``html_table_to_markdown(html)``: the same from an HTML ``<table>`` (``unstructured``'s ``text_as_html``),
  with ``colspan`` cells repeated and ``rowspan`` cells carried down so every row has every column;
- ``summarize_table(markdown)``: 'Table "<caption>" with columns A, B, C; N rows; first rows: a1, b1, c1 | …'
  (no LLM involved: the same table always gets the same summary).
- ``llm_summarize_table(markdown, llm)``: the LLM's 1-3 sentence summary (PIKE-RAG §5.1.2: "multi-modal content
  such as tables and figures is summarized by LLMs"), from the caption, header and first rows; falls back to
  ``summarize_table`` when the model gives no usable answer.
"""

from __future__ import annotations

import logging
import re
from html.parser import HTMLParser
from typing import Any

from pydantic import BaseModel, field_validator


log = logging.getLogger(__name__)

_WS = re.compile(r"\s+")
#: Summary limits (characters), so a 40-column table still gives a readable one-paragraph summary.
MAX_COLUMNS_LISTED = 16
MAX_CELL_CHARS = 40
SUMMARY_ROWS = 3
MAX_SUMMARY_CHARS = 700


def clean_cell(text: str | None) -> str:
    """One-line cell text: whitespace collapsed, pipes escaped."""
    if not text:
        return ""
    return _WS.sub(" ", text).strip().replace("|", "\\|")


def rows_to_markdown(header: list[str], rows: list[list[str]], caption: str | None = None) -> str:
    """A Markdown pipe table. Rows are padded/truncated to the header's width; an empty header cell becomes
    ``Column <n>``. ``caption`` (if any) is written as a bold line above the table."""
    width = max([len(header)] + [len(r) for r in rows]) if (header or rows) else 0
    head = [clean_cell(h) or f"Column {i + 1}" for i, h in enumerate(list(header) + [""] * (width - len(header)))]
    lines = []
    if caption and clean_cell(caption):
        lines += [f"**{clean_cell(caption)}**", ""]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(["---"] * width) + "|")
    for r in rows:
        cells = [clean_cell(c) for c in list(r)[:width]] + [""] * (width - len(r))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


class _TableHTML(HTMLParser):
    """Collects rows of (text, colspan, rowspan, is_header) from the first-level cells of HTML tables."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[tuple[str, int, int, bool]]] = []
        self._cell: list[str] | None = None
        self._span = (1, 1, False)
        self._depth = 0  # nested tables are flattened into their parent cell's text

    @staticmethod
    def _int(value: str | None) -> int:
        try:
            return max(1, min(int(value or 1), 1000))
        except ValueError:
            return 1

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._depth += 1
        elif self._depth > 1:
            return
        elif tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            a = dict(attrs)
            self._close_cell()
            if not self.rows:
                self.rows.append([])
            self._cell = []
            self._span = (self._int(a.get("colspan")), self._int(a.get("rowspan")), tag == "th")
        elif tag == "br" and self._cell is not None:
            self._cell.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._depth -= 1
            if self._depth == 0:
                self._close_cell()
        elif self._depth == 1 and tag in ("td", "th", "tr"):
            self._close_cell()

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def _close_cell(self) -> None:
        if self._cell is not None:
            colspan, rowspan, th = self._span
            self.rows[-1].append((_WS.sub(" ", "".join(self._cell)).strip(), colspan, rowspan, th))
            self._cell = None


def html_table_to_rows(html: str) -> tuple[list[list[str]], int]:
    """The grid of an HTML table (spans expanded) and how many leading rows are header rows (all ``<th>``)."""
    parser = _TableHTML()
    parser.feed(html)
    parser.close()
    grid: list[list[str]] = []
    carry: dict[int, tuple[str, int]] = {}  # column -> (text, rows still covered) from rowspan
    header_rows = 0
    counting_header = True
    for raw in parser.rows:
        row: list[str] = []
        col = 0
        cells = list(raw)
        all_th = bool(cells) and all(c[3] for c in cells)
        while cells or col in carry:
            if col in carry:
                text, left = carry[col]
                row.append(text)
                if left <= 1:
                    del carry[col]
                else:
                    carry[col] = (text, left - 1)
                col += 1
                continue
            text, colspan, rowspan, _ = cells.pop(0)
            for k in range(colspan):
                row.append(text)
                if rowspan > 1:
                    carry[col + k] = (text, rowspan - 1)
            col += colspan
        if not any(c for c in row):
            continue
        grid.append(row)
        if counting_header and all_th:
            header_rows += 1
        else:
            counting_header = False
    return grid, header_rows


def html_table_to_markdown(html: str) -> str:
    """Markdown for an HTML table. Leading all-``<th>`` rows are merged into the header; without one, the
    first row is the header. Returns '' for a table without text."""
    grid, header_rows = html_table_to_rows(html)
    if not grid:
        return ""
    width = max(len(r) for r in grid)
    grid = [r + [""] * (width - len(r)) for r in grid]
    caption = None
    # A first row with a single text (one cell, or one cell spanning the width) is a caption, not a header.
    if len(grid) > 1 and width > 1 and len({c for c in grid[0] if c}) == 1:
        caption = next(c for c in grid[0] if c)
        grid = grid[1:]
        header_rows = max(0, header_rows - 1)
    n = max(1, header_rows) if len(grid) > 1 else 1
    if len(grid) == 1:
        return rows_to_markdown(grid[0], [], caption)
    header = [" ".join(dict.fromkeys(x for x in col if x)) for col in zip(*grid[:n])]
    return rows_to_markdown(header, grid[n:], caption)


def parse_markdown_table(markdown: str) -> tuple[str | None, list[str], list[list[str]]]:
    """(caption, header, rows) of a Markdown pipe table as written by ``rows_to_markdown`` (the first
    non-table line, bold markers removed, is the caption)."""
    caption = None
    table_lines: list[str] = []
    for line in markdown.splitlines():
        s = line.strip()
        if s.startswith("|"):
            table_lines.append(s)
        elif s and caption is None and not table_lines:
            caption = s.strip("*").strip()
    rows = [_split_row(line) for line in table_lines if not re.fullmatch(r"\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*", line)]
    if not rows:
        return caption, [], []
    return caption, rows[0], rows[1:]


def _split_row(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    cells = re.split(r"(?<!\\)\|", body)
    return [c.strip().replace("\\|", "|") for c in cells]


def _short(text: str, limit: int = MAX_CELL_CHARS) -> str:
    text = _WS.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def summarize_table(markdown: str) -> str:
    """A deterministic one-paragraph description of a Markdown table: caption, columns, row count and the
    first rows, e.g. 'Table "NICS Firearm Background Checks" with columns State / Territory, Permit, …;
    55 rows; first rows: Alabama, 18,870, … | Alaska, 209, …'. Empty cells are left out of the rows shown."""
    caption, header, rows = parse_markdown_table(markdown)
    if not header:
        return "Empty table."
    cols = [_short(h) for h in header]
    listed = ", ".join(cols[:MAX_COLUMNS_LISTED])
    if len(cols) > MAX_COLUMNS_LISTED:
        listed += f" and {len(cols) - MAX_COLUMNS_LISTED} more"
    name = f'Table "{_short(caption, 120)}"' if caption else "Table"
    parts = [f"{name} with column{'s' if len(cols) != 1 else ''} {listed}",
             f"{len(rows)} row{'s' if len(rows) != 1 else ''}"]
    if rows:
        shown = []
        for r in rows[:SUMMARY_ROWS]:
            cells = [_short(c, 30) for c in r if c.strip()]
            shown.append(", ".join(cells[:MAX_COLUMNS_LISTED]))
        parts.append("first rows: " + " | ".join(shown))
    summary = "; ".join(parts) + "."
    if len(summary) > MAX_SUMMARY_CHARS:
        summary = summary[: MAX_SUMMARY_CHARS - 1].rstrip() + "…"
    return summary


# --- LLM summary ---------------------------------------------------------------------------------------

#: Data rows shown to the LLM (with the header and caption).
LLM_SUMMARY_ROWS = 8
#: Longest LLM summary kept (characters); longer answers are cut at a sentence end.
MAX_LLM_SUMMARY_CHARS = 1000


class TableSummary(BaseModel):
    """The LLM's answer to ``kbgraph.ingest.prompts.TABLE_SUMMARY_PROMPT``."""

    summary: str

    @field_validator("summary")
    @classmethod
    def _not_empty(cls, v: str) -> str:
        v = _WS.sub(" ", v).strip()
        if not v:
            raise ValueError("the summary is empty")
        return v


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("! "), cut.rfind("? "))
    return cut[: end + 1] if end > limit // 2 else cut[: limit - 1].rstrip() + "…"


def llm_summarize_table(markdown: str, llm: Any, *, context: str | None = None, rows: int = LLM_SUMMARY_ROWS) -> str:
    """The LLM's summary of a Markdown table: 1-3 sentences naming what it is about, its columns and what its
    rows are keyed by (at most MAX_LLM_SUMMARY_CHARS characters).

    ``llm``: an object with ``complete_json(messages, schema)`` (``kbgraph.llm``: a JSON answer that does not
    validate gets one repair request). The model sees the caption, ``context`` (e.g. 'document > section'),
    the row count, and the header with the first ``rows`` rows. Falls back to the deterministic
    ``summarize_table`` when the table has no header or the model gives no valid answer even after the
    repair; errors of the LLM server itself (LLMError not caused by the answer) propagate.
    """
    from kbgraph.ingest.prompts import table_summary_messages
    from kbgraph.llm.client import usable_json

    caption, header, body = parse_markdown_table(markdown)
    if not header:
        return summarize_table(markdown)
    shown = body[: max(0, rows)]
    messages = table_summary_messages(
        rows_to_markdown(header, shown), caption=caption, n_rows=len(body), shown=len(shown), context=context
    )
    answer, why = usable_json(llm, messages, TableSummary)
    if answer is None:
        log.warning("no usable LLM table summary (%s); using the deterministic one", why)
        return summarize_table(markdown)
    return _cap(answer.summary, MAX_LLM_SUMMARY_CHARS)
