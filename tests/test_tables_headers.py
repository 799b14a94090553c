"""Tables keep their headers and their signs: multi-row HTML headers are joined column by column (with
``colspan`` and ``rowspan`` expanded), the row-label column keeps an empty header instead of 'Column 1',
and PDF minus signs (U+2212, dashes, glyphs that decode to U+FFFD) come out as '-'.

Every input is built here and parsed with ``parse_file``, the ingestion entry point.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf
from kbgraph.ingest.parse import ParsedDocument, parse_file
from kbgraph.ingest.tables import normalize_signs, summarize_table

from kbgraph.text import parse_markdown_table

MAX_BYTES = 10_000_000

# A 10-K style page: a two-row <thead> whose first row spans the year columns, negative numbers with a
# typographic minus (&minus;) and an en dash, and a second, EDGAR-style table (no <th>, '$' and ')' in cells
# of their own, spacer cells, a row label spanning two rows).
TEN_K = """<!DOCTYPE html>
<html><head><title>Acme Corp Form 10-K</title></head><body>
<h1>Acme Corp annual report</h1>
<h2>Results of operations</h2>
<p>The following table summarizes our consolidated results of operations for the years presented.</p>
<table>
  <thead>
    <tr><th></th><th colspan="2">Year ended December 31</th></tr>
    <tr><th></th><th>2021</th><th>2020</th></tr>
  </thead>
  <tbody>
    <tr><td>Revenue</td><td>$ 53,823</td><td>$ 31,536</td></tr>
    <tr><td>Operating income (loss)</td><td>1,020</td><td>&minus;1,234</td></tr>
    <tr><td>Other income (expense), net</td><td>&#8211;12</td><td>(&minus;56)</td></tr>
  </tbody>
</table>
<p>Revenue grew by 71% in 2021, driven by deliveries.</p>
<h2>Segments</h2>
<table>
  <tr><td></td><td colspan="7">Year Ended December 31,</td></tr>
  <tr><td>(in millions)</td><td colspan="3">2021</td><td></td><td colspan="3">2020</td></tr>
  <tr><td rowspan="2">Automotive</td><td>$</td><td>47,232</td><td></td><td></td><td>$</td><td>27,236</td><td></td></tr>
  <tr><td></td><td>1,642</td><td></td><td></td><td></td><td>1,580</td><td></td></tr>
  <tr><td>Energy generation</td><td>$</td><td>(1,234</td><td>)</td><td></td><td>$</td><td>(862</td><td>)</td></tr>
</table>
</body></html>
"""


def _tables(doc: ParsedDocument) -> list[tuple[str | None, list[str], list[list[str]]]]:
    return [parse_markdown_table(e.text) for e in doc.elements if e.kind == "table"]


def test_html_multi_row_header_is_joined(tmp_path: Path) -> None:
    path = tmp_path / "acme-10k.html"
    path.write_text(TEN_K, encoding="utf-8")
    doc = parse_file(path, max_bytes=MAX_BYTES)
    tables = _tables(doc)
    assert len(tables) == 2, [e.text for e in doc.elements]
    _caption, header, rows = tables[0]
    assert header == ["", "Year ended December 31 2021", "Year ended December 31 2020"]
    assert rows[0] == ["Revenue", "$ 53,823", "$ 31,536"]
    assert rows[1] == ["Operating income (loss)", "1,020", "-1,234"]
    assert rows[2] == ["Other income (expense), net", "-12", "(-56)"]
    text = "\n".join(e.text for e in doc.elements if e.kind == "table")
    assert "Column" not in text and "\u2212" not in text and "\u2013" not in text
    # the summary names the joined columns (the unnamed row-label column is left out)
    summary = summarize_table(next(e.text for e in doc.elements if e.kind == "table"))
    assert "Year ended December 31 2021, Year ended December 31 2020" in summary


def test_html_edgar_layout_table(tmp_path: Path) -> None:
    """No <th> at all: the header is the rows above the first row label; '$' and ')' cells join their value,
    spacer columns go, and a row label spanning two rows stays with each of them."""
    path = tmp_path / "acme-segments.htm"
    path.write_text(TEN_K, encoding="utf-8")
    _caption, header, rows = _tables(parse_file(path, max_bytes=MAX_BYTES))[1]
    assert header == ["(in millions)", "Year Ended December 31, 2021", "Year Ended December 31, 2020"]
    assert rows == [
        ["Automotive", "$47,232", "$27,236"],
        ["Automotive", "1,642", "1,580"],
        ["Energy generation", "$(1,234)", "$(862)"],
    ]


def test_sign_normalisation() -> None:
    assert normalize_signs("\u22121,234") == "-1,234" and normalize_signs("5\u22123") == "5-3"
    assert normalize_signs("(\ufffd1,234)") == "(-1,234)"
    assert normalize_signs("\ufffd12") == "-12"
    assert normalize_signs("\u2013$3.5") == "-$3.5"
    # not a sign: a range, a lone dash, a replacement character inside a word
    assert normalize_signs("2020\u20132021") == "2020\u20132021"
    assert normalize_signs("\u2014") == "\u2014"
    assert normalize_signs("caf\ufffd") == "caf\ufffd"


# --- PDF ------------------------------------------------------------------------------------------------
PDF_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP  # those of kbgraph.ingest.parse_pdf
#: Cell text as written with the built-in Helvetica (WinAnsi, one byte a character). The font's encoding is
#: then changed so that byte 0xB7 is the glyph 'minus' (text extraction gives U+2212) and byte 0x81 a glyph
#: name without a Unicode value (MuPDF gives U+FFFD, as for a subset font without a ToUnicode map);
#: 0x96 is WinAnsi's en dash.
PDF_ROWS = [
    ["Line item", "Current year", "Prior year"],
    ["Revenue", "53,823", "31,536"],
    ["Operating loss", "\xb71,234", "(\x8156)"],
    ["Net change", "\x963", "\x8112"],
    ["Adjustments", "0", "\xb7"],
]


def _pdf_with_signed_table(path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 60), "Statement of operations", fontname="helv", fontsize=14)
    page.insert_text(
        (72, 90), "Amounts in thousands of dollars, negative figures are losses.", fontname="helv", fontsize=10
    )
    x = [72, 252, 372, 492]
    y0, h = 110, 24
    for i in range(len(PDF_ROWS) + 1):
        page.draw_line((x[0], y0 + i * h), (x[-1], y0 + i * h), width=0.8)
    for xi in x:
        page.draw_line((xi, y0), (xi, y0 + len(PDF_ROWS) * h), width=0.8)
    for i, row in enumerate(PDF_ROWS):
        for j, cell in enumerate(row):
            page.insert_text((x[j] + 6, y0 + i * h + 16), cell, fontname="helv", fontsize=10)
    xref = page.get_fonts()[0][0]
    doc.xref_set_key(xref, "Encoding", "<< /BaseEncoding /WinAnsiEncoding /Differences [ 129 /g0129 183 /minus ] >>")
    doc.save(path)


def test_pdf_table_negative_numbers(tmp_path: Path) -> None:
    path = tmp_path / "statement.pdf"
    _pdf_with_signed_table(path)
    raw = pymupdf.open(path)[0].get_text(flags=PDF_FLAGS)
    # the test's premise: the PDF really decodes to a typographic minus, U+FFFD and an en dash
    assert "\u22121,234" in raw and "(\ufffd56)" in raw and "\u20133" in raw and "\ufffd12" in raw, raw
    doc = parse_file(path, max_bytes=MAX_BYTES)
    tables = [e for e in doc.elements if e.kind == "table"]
    assert len(tables) == 1, [(e.kind, e.text) for e in doc.elements]
    text = tables[0].text
    assert "\ufffd" not in text and "\u2212" not in text, text
    _caption, header, rows = parse_markdown_table(text)
    assert header == ["Line item", "Current year", "Prior year"]
    assert ["Operating loss", "-1,234", "(-56)"] in rows, rows
    assert ["Net change", "-3", "-12"] in rows, rows
    assert rows[-1] == ["Adjustments", "0", "-"], rows  # U+2212 alone is a minus too
