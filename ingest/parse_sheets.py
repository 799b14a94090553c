"""Spreadsheets -> Markdown table elements (``Element(kind="table")``), the header row kept.

- **.xlsx / .xlsm** (openpyxl), **.xls** (xlrd), **.ods** (odfpy), all through ``pandas.read_excel``: every
  sheet, in workbook order, becomes a level-1 heading with the sheet's name followed by its table.
- **.csv / .tsv** (the standard ``csv`` module, encoding found by ``decode.decode_text``; a .csv's delimiter
  is sniffed among ``, ; TAB |``): one table, no heading.

The first non-empty row is the header. Rows above it holding a single filled cell (a title line such as
"Sales 2023") become the table's caption; empty rows and columns are dropped. Cells are written on one
line: whole numbers without a trailing ``.0``, dates as ISO 8601, booleans as TRUE/FALSE.

A chunk holds one table element, so a long sheet is cut into row blocks of at most ``BLOCK_ROWS`` rows and
about ``BLOCK_CHARS`` characters; each block repeats the header row and its caption says which rows it
holds ("Revenue (rows 41-80 of 500)"), so every chunk reads on its own.

Errors: ``IngestError`` naming the file and the fix (corrupt, password-protected, no data, reader missing).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import logging
import math
import re
from pathlib import Path

from kbgraph.errors import IngestError
from kbgraph.ingest.decode import decode_text
from kbgraph.ingest.parse_common import UNKNOWN_ERROR, RawElement, describe
from kbgraph.ingest.properties import ooxml_core_properties
from kbgraph.ingest.tables import rows_to_markdown
from kbgraph.text import one_line

log = logging.getLogger(__name__)

#: At most this many body rows per table element.
BLOCK_ROWS = 40
#: About this many characters of Markdown per table element (a block holds at least one row).
BLOCK_CHARS = 4000
#: pandas engine for each workbook type, and the package that provides it.
_ENGINES = {
    ".xlsx": ("openpyxl", "openpyxl"),
    ".xlsm": ("openpyxl", "openpyxl"),
    ".xls": ("xlrd", "xlrd"),
    ".ods": ("odf", "odfpy"),
}
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_WS = re.compile(r"\s+")


def parse_sheet_file(data: bytes, ext: str, name: str) -> tuple[str | None, list[RawElement]]:
    """(title, raw elements) of a spreadsheet or delimited text file. Title: the file name's stem (a
    workbook's single sheet is usually called "Sheet1", no title). Raises IngestError."""
    if ext in (".csv", ".tsv"):
        rows = read_delimited(decode_text(data, name), tab=ext == ".tsv", name=name)
        elements = table_elements(rows, label=Path(name).stem)
        if not elements:
            raise IngestError(f"no data in {name}: every row is empty")
        return Path(name).stem, elements
    raw: list[RawElement] = []
    if ext in (".xlsx", ".xlsm"):
        describe(properties=ooxml_core_properties(data))  # author, created, modified (kbgraph.ingest.metadata)
    for sheet, rows in read_workbook(data, ext, name):
        tables = table_elements(rows, label=sheet)
        if tables:
            raw.append({"kind": "heading", "text": sheet, "level": 1})
            raw.extend(tables)
    if not raw:
        raise IngestError(f"no data in {name}: every sheet is empty")
    return Path(name).stem, raw


# --- reading -------------------------------------------------------------------------------------------


def read_delimited(text: str, *, tab: bool, name: str) -> list[list[str]]:
    """Rows of a CSV (delimiter sniffed among ``, ; TAB |``, default comma) or TSV text."""
    if tab:
        dialect: type[csv.Dialect] = csv.excel_tab
    else:
        sample = text[:65536]
        try:
            dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
    try:
        return [[_cell(c) for c in row] for row in csv.reader(io.StringIO(text, newline=""), dialect)]
    except csv.Error as exc:
        kind = "TSV" if tab else "CSV"
        raise IngestError(f"corrupt or unreadable {kind} {name}: {one_line(exc, 200, empty=UNKNOWN_ERROR)}") from exc


def read_workbook(data: bytes, ext: str, name: str) -> list[tuple[str, list[list[str]]]]:
    """[(sheet name, rows of cell strings)] of a workbook, in workbook order."""
    engine, package = _ENGINES[ext]
    if ext != ".xls" and data.startswith(_OLE_MAGIC):
        raise IngestError(
            f"cannot read {name}: it is password-protected or a legacy .xls under another name "
            f"(remove the password, or rename it to .xls)"
        )
    try:
        import pandas as pd

        __import__(engine if engine != "odf" else "odf.opendocument")
    except ImportError as exc:
        raise IngestError(
            f"cannot read {name}: reading {ext} needs the Python package {package!r} (pip install 'kbgraph[ingest]')"
        ) from exc
    try:
        frames = pd.read_excel(io.BytesIO(data), sheet_name=None, header=None, dtype=object, engine=engine)
    except Exception as exc:  # each reader has its own errors (BadZipFile, XLRDError, KeyError, ...)
        text = one_line(exc, 200, empty=UNKNOWN_ERROR)
        if "encrypt" in text.lower() or "password" in text.lower():
            raise IngestError(f"cannot read {name}: the workbook is password-protected (remove the password)") from exc
        raise IngestError(f"corrupt or unreadable {ext} {name}: {type(exc).__name__}: {text}") from exc
    return [
        (str(sheet), [[_cell(v) for v in row] for row in frame.itertuples(index=False, name=None)])
        for sheet, frame in frames.items()
    ]


def _cell(value: object) -> str:
    """One cell as one line of text."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    if isinstance(value, dt.datetime):
        try:
            if value != value:  # pandas.NaT
                return ""
        except TypeError:
            return ""
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    text = str(value)
    if text in ("nan", "NaT") and type(value).__module__.startswith(("pandas", "numpy")):
        return ""
    return _WS.sub(" ", text).strip()


# --- rows -> table elements ----------------------------------------------------------------------------


def table_elements(rows: list[list[str]], *, label: str) -> list[RawElement]:
    """Table elements of one sheet: header = the first non-empty row (single-cell rows above it: caption),
    empty rows and columns dropped, cut into row blocks that repeat the header. [] for an empty sheet."""
    rows = [r for r in rows if any(c for c in r)]
    if not rows:
        return []
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    keep = [j for j in range(width) if any(r[j] for r in rows)]
    rows = [[r[j] for j in keep] for r in rows]
    caption_lines: list[str] = []
    while len(rows) > 1 and len(keep) > 1 and sum(1 for c in rows[0] if c) == 1:
        caption_lines.append(next(c for c in rows[0] if c))
        rows.pop(0)
    header, body = rows[0], rows[1:]
    caption = " — ".join(caption_lines) or None
    out: list[RawElement] = []
    for md in row_blocks(header, body, caption=caption, label=label):
        out.append({"kind": "table", "text": md, "markdown": md})
    return out


def row_blocks(header: list[str], body: list[list[str]], *, caption: str | None, label: str) -> list[str]:
    """Markdown tables of at most BLOCK_ROWS rows / ~BLOCK_CHARS characters, each with the header. When
    the table is cut, each caption names its rows."""
    head_chars = sum(len(c) + 3 for c in header) * 2
    spans: list[tuple[int, int]] = []
    start = 0
    while start < len(body) or not spans:
        end, chars = start, head_chars
        while end < len(body) and end - start < BLOCK_ROWS:
            chars += sum(len(c) + 3 for c in body[end]) + 2
            if chars > BLOCK_CHARS and end > start:
                break
            end += 1
        spans.append((start, end))
        start = end
        if not body:
            break
    if len(spans) == 1:
        return [rows_to_markdown(header, body, caption=caption)]
    n = len(body)
    return [
        rows_to_markdown(header, body[a:b], caption=f"{caption or label} (rows {a + 1}-{b} of {n})") for a, b in spans
    ]
