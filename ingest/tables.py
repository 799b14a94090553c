"""Tables as Markdown, and their deterministic summary (PIKE-RAG §5.1.1 asks for a summary of each table;
this one needs no LLM, so ingestion without a model still describes every table chunk).

- ``rows_to_markdown(header, rows, caption=None)``: a GitHub-style pipe table (cells escaped, one line each,
  minus signs normalised by ``normalize_signs``: U+2212, and a dash or U+FFFD standing before a number, -> '-');
- ``grid_to_markdown(grid, marked)``: the same from a cell grid with multi-row headers joined column by column
  ('Year ended December 31' over '2021' -> 'Year ended December 31 2021'), the row-label column's empty header
  kept empty, and EDGAR-style '$' / ')' / spacer columns folded into their values;
- ``kbgraph.ingest.tables_html.html_table_to_markdown(html)``: the same from an HTML ``<table>`` (``colspan``
  cells repeated and ``rowspan`` cells carried down so every row has every column);
- ``summarize_table(markdown)``: 'Table "<caption>" with columns A, B, C; N rows; first rows: a1, b1, c1 | …'
  (no LLM involved: the same table always gets the same summary).
- ``llm_summarize_table(markdown, llm)``: the LLM's 1-3 sentence summary (PIKE-RAG §5.1.2: "multi-modal content
  such as tables and figures is summarized by LLMs"), from the caption, header and first rows; falls back to
  ``summarize_table`` when the model gives no usable answer.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from pydantic import BaseModel, Field, field_validator

from kbgraph.llm.bounds import answer_schema
from kbgraph.text import parse_markdown_table
from kbgraph.ingest.prompts import table_summary_messages
from kbgraph.llm.base import usable_json
from kbgraph.llm.base import LLM

log = logging.getLogger(__name__)

_WS = re.compile(r"\s+")
#: Summary limits (characters), so a 40-column table still gives a readable one-paragraph summary.
MAX_COLUMNS_LISTED = 16
MAX_CELL_CHARS = 40
SUMMARY_ROWS = 3
MAX_SUMMARY_CHARS = 700


#: Dashes that stand for a minus sign before a number ('–12', '(—3)'), and the replacement character a PDF
#: font without a Unicode map gives for its minus glyph ('(\ufffd1,234)'): in that position, they are '-'.
_SIGN_DASH = re.compile(r"(?<![\w.,])[\u2010\u2011\u2012\u2013\u2014\u2015\ufffd](?=[$€£¥]?\d)")
#: Minus signs that are always '-': U+2212 MINUS SIGN, U+FE63 SMALL HYPHEN-MINUS, U+FF0D FULLWIDTH HYPHEN-MINUS.
_MINUS = str.maketrans({"\u2212": "-", "\ufe63": "-", "\uff0d": "-"})


def normalize_signs(text: str) -> str:
    """``text`` with typographic minus signs as '-': U+2212 (and its small and full-width forms) everywhere;
    an en/em/figure dash or U+FFFD (a PDF glyph without a Unicode mapping) only where it stands as a sign,
    directly before a number and not after a letter or digit ('–12' -> '-12', '(\ufffd1,234)' ->
    '(-1,234)'; a range '2020–2021' and a lone '—' are kept)."""
    if not text:
        return text or ""
    return _SIGN_DASH.sub("-", text.translate(_MINUS))


def clean_cell(text: str | None) -> str:
    """One-line cell text: whitespace collapsed, pipes escaped, minus signs normalised (``normalize_signs``)."""
    if not text:
        return ""
    return normalize_signs(_WS.sub(" ", text).strip()).replace("|", "\\|")


def rows_to_markdown(header: list[str], rows: list[list[str]], caption: str | None = None) -> str:
    """A Markdown pipe table. Rows are padded/truncated to the widest row or header; an empty header cell
    stays empty (the row-label column of a financial table has none). ``caption`` (if any) is written as a
    bold line above the table."""
    width = max([len(header)] + [len(r) for r in rows]) if (header or rows) else 0
    head = [clean_cell(h) for h in list(header) + [""] * (width - len(header))]
    lines = []
    if caption and clean_cell(caption):
        lines += [f"**{clean_cell(caption)}**", ""]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(["---"] * width) + "|")
    for r in rows:
        cells = [clean_cell(c) for c in list(r)[:width]] + [""] * (width - len(r))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --- grids (HTML, DOCX) -> Markdown -------------------------------------------------------------


_YEAR = re.compile(r"^(?:fiscal |fy ?)?(?:19|20)\d\d[a-z]?$", re.I)
_SYMBOL_CELL = re.compile(r"^[$€£¥%()]{1,2}$")
MAX_HEADER_ROWS = 4


def _header_rows(grid: list[list[str]], marked: list[bool]) -> int:
    """How many leading rows form the header: the rows marked as such (``<th>``/``<thead>``); else the
    leading rows of a financial-statement layout, whose row-label cell is empty or whose other cells are
    only years; else the first row."""
    n = 0
    while n < len(marked) and marked[n] and n < MAX_HEADER_ROWS:
        n += 1
    if n == 0:
        while n < min(len(grid) - 1, MAX_HEADER_ROWS):
            row = grid[n]
            values = [c for c in row[1:] if c]
            if values and (not row[0] or all(_YEAR.match(v) for v in values)):
                n += 1
            else:
                break
    return max(1, min(n, len(grid) - 1)) if len(grid) > 1 else 1


def _tidy_columns(header: list[list[str]], body: list[list[str]]) -> tuple[list[list[str]], list[list[str]]]:
    """Columns as a reader sees them in an EDGAR-style table: a column of bare '$' / '(' cells is joined to
    the value on its right, one of ')' / '%' cells to the value on its left; columns empty in the body and
    whose header is only a spanned group label (or nothing) are dropped; adjacent identical columns (a
    ``colspan`` over body cells) are kept once. ``header`` and ``body`` are lists of rows of equal width."""
    rows = header + body
    width = len(rows[0]) if rows else 0
    cols = [[r[j] for r in rows] for j in range(width)]
    nh = len(header)

    def body_vals(col: list[str]) -> list[str]:
        return [c for c in col[nh:] if c]

    # 1. symbol columns join their neighbour
    j = 0
    while j < len(cols):
        vals = body_vals(cols[j])
        if vals and all(_SYMBOL_CELL.match(v) for v in vals):
            right = all(v in ("$", "€", "£", "¥", "(", "$(") for v in vals)
            k = j + 1 if right else j - 1
            if 0 <= k < len(cols) and body_vals(cols[k]):
                for i in range(nh, len(rows)):
                    mine, other = cols[j][i], cols[k][i]
                    if mine and other:
                        cols[k][i] = mine + other if right else other + mine
                del cols[j]
                continue
        j += 1
    # 2. body-empty columns under a group label or nothing
    heads = [" ".join(dict.fromkeys(x for x in c[:nh] if x)) for c in cols]
    keep = []
    for j, c in enumerate(cols):
        if body and not body_vals(c):
            others = " ".join(h for i, h in enumerate(heads) if i != j)
            if not heads[j] or heads[j] in others:
                continue
        keep.append(c)
    # 3. adjacent duplicates
    out: list[list[str]] = []
    for c in keep:
        if out and c == out[-1]:
            continue
        out.append(c)
    if not out:
        return header, body
    rows = [list(r) for r in zip(*out, strict=True)]
    return rows[:nh], rows[nh:]


def grid_to_markdown(
    grid: list[list[str]],
    marked: list[bool] | None = None,
    caption: str | None = None,
    spanned: list[list[bool]] | None = None,
) -> str:
    """Markdown for a table grid (spans already expanded; ``marked[i]``: row i is marked as a header row;
    ``spanned[i][j]``: cell (i, j) repeats its left neighbour by ``colspan``). Without a ``caption``, a first
    row holding one text that starts in the first column and fills the row is the caption. Header rows (see
    ``_header_rows``) are joined column by column into one header cell ('Year ended December 31' over '2021'
    -> 'Year ended December 31 2021'), a spanned group label repeated over each of its columns; an empty
    header cell (the row-label column) stays empty. In body rows (and a full-width header title) a spanned
    cell is written once. Columns are tidied (``_tidy_columns``). Returns '' for a grid without text."""
    width = max((len(r) for r in grid), default=0)
    rows = []
    for i, r in enumerate(grid):
        if any(c.strip() for c in r):
            span = list(spanned[i]) if spanned and i < len(spanned) else []
            rows.append(
                (
                    list(r) + [""] * (width - len(r)),
                    bool(marked and i < len(marked) and marked[i]),
                    span + [False] * (width - len(span)),
                )
            )
    if not rows:
        return ""

    def full_width(row: list[str]) -> bool:  # one text from the first column on, filling the row
        return bool(row[0]) and all(c in ("", row[0]) for c in row)

    if caption is None and len(rows) > 1 and width > 1 and full_width(rows[0][0]):
        caption, rows = rows[0][0][0], rows[1:]
    if len(rows) == 1:
        return rows_to_markdown(rows[0][0], [], caption)
    n = _header_rows([r for r, _, _ in rows], [m for _, m, _ in rows])
    # a spanned cell is written once in the body, and in a header row that is one full-width title
    once = [
        [("" if sp[j] and (i >= n or full_width(r)) else c) for j, c in enumerate(r)]
        for i, (r, _, sp) in enumerate(rows)
    ]
    head_rows, body = _tidy_columns(once[:n], once[n:])
    header = [" ".join(dict.fromkeys(x for x in col if x)) for col in zip(*head_rows, strict=True)]
    return rows_to_markdown(header, body, caption)


def _short(text: str, limit: int = MAX_CELL_CHARS) -> str:
    text = _WS.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def summarize_table(markdown: str) -> str:
    """A deterministic one-paragraph description of a Markdown table: caption, columns, row count and the
    first rows, e.g. 'Table "NICS Firearm Background Checks" with columns State / Territory, Permit, …;
    55 rows; first rows: Alabama, 18,870, … | Alaska, 209, …'. Empty cells and unnamed columns are left out."""
    caption, header, rows = parse_markdown_table(markdown)
    if not header:
        return "Empty table."
    cols = [_short(h) for h in header if h.strip()]  # the row-label column may have no name
    listed = ", ".join(cols[:MAX_COLUMNS_LISTED])
    if len(cols) > MAX_COLUMNS_LISTED:
        listed += f" and {len(cols) - MAX_COLUMNS_LISTED} more"
    name = f'Table "{_short(caption, 120)}"' if caption else "Table"
    described = f"column{'s' if len(cols) != 1 else ''} {listed}" if cols else f"{len(header)} unnamed columns"
    parts = [f"{name} with {described}", f"{len(rows)} row{'s' if len(rows) != 1 else ''}"]
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


@answer_schema
class TableSummary(BaseModel):
    """The LLM's answer to ``kbgraph.ingest.prompts.TABLE_SUMMARY_PROMPT``: at most ``MAX_LLM_SUMMARY_CHARS``
    (a longer answer is cut at a sentence end)."""

    summary: str = Field(max_length=MAX_LLM_SUMMARY_CHARS)

    @field_validator("summary", mode="before")
    @classmethod
    def _capped(cls, v: Any) -> Any:
        return _cap(_WS.sub(" ", v).strip(), MAX_LLM_SUMMARY_CHARS) if isinstance(v, str) else v

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


def llm_summarize_table(markdown: str, llm: LLM, *, context: str | None = None, rows: int = LLM_SUMMARY_ROWS) -> str:
    """The LLM's summary of a Markdown table: 1-3 sentences naming what it is about, its columns and what its
    rows are keyed by (at most MAX_LLM_SUMMARY_CHARS characters).

    ``llm``: an object with ``complete_json(messages, schema)`` (``kbgraph.llm``: a JSON answer that does not
    validate gets one repair request). The model sees the caption, ``context`` (e.g. 'document > section'),
    the row count, and the header with the first ``rows`` rows. Falls back to the deterministic
    ``summarize_table`` when the table has no header or the model gives no valid answer even after the
    repair; errors of the LLM server itself (LLMError not caused by the answer) propagate.
    """
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
