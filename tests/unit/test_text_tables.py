"""Text and table helpers (kbgraph.text, kbgraph.ingest.tables): one-line messages, Markdown tables, table
grids and their deterministic summaries."""

from __future__ import annotations

import pytest

from kbgraph.ingest.tables import clean_cell, grid_to_markdown, normalize_signs, rows_to_markdown, summarize_table
from kbgraph.text import chunk_body, index_text, one_line, parse_markdown_table, split_table_row, strip_disambiguator


def test_one_line() -> None:
    assert one_line("a\n  b\tc") == "a b c"
    assert one_line("x" * 10, 5) == "xxxx…"
    assert one_line("   ", empty="unknown error") == "unknown error"
    assert one_line(ValueError("bad   value")) == "bad value"


@pytest.mark.parametrize(
    "title, stripped",
    [
        ("Anthony Robinson (Unitarian)", "Anthony Robinson"),
        ("Alien (1979 film)", "Alien"),
        ("No paren", "No paren"),
        ("(Only)", ""),
        ("A (b) c", "A (b) c"),
    ],
)
def test_strip_disambiguator(title: str, stripped: str) -> None:
    assert strip_disambiguator(title) == stripped


def test_a_markdown_table_round_trip_with_caption_and_escaped_pipes() -> None:
    md = rows_to_markdown(["Name", "Value"], [["a|b", "1"], ["c"]], caption="My  table")
    assert md.splitlines()[0] == "**My table**"
    caption, header, rows = parse_markdown_table(md)
    assert caption == "My table" and header == ["Name", "Value"]
    assert rows == [["a|b", "1"], ["c", ""]]
    assert split_table_row(r"| x \| y | z |") == ["x | y", "z"]


def test_minus_signs_become_hyphens_only_where_they_are_signs() -> None:
    assert normalize_signs("\u221212 and \u20135 but 2020\u20132021, \u2014 alone, (\ufffd1,234)") == (
        "-12 and -5 but 2020\u20132021, \u2014 alone, (-1,234)"
    )
    assert clean_cell("  a \n b | c ") == r"a b \| c"
    assert clean_cell(None) == ""


def test_a_financial_grid_joins_its_header_rows_and_dollar_columns() -> None:
    grid = [["", "Year ended", "Year ended"], ["", "2021", "2020"], ["Revenue", "10", "8"], ["Costs", "(4)", "(3)"]]
    md = grid_to_markdown(grid)
    caption, header, rows = parse_markdown_table(md)
    assert caption is None and header == ["", "Year ended 2021", "Year ended 2020"]
    assert rows == [["Revenue", "10", "8"], ["Costs", "(4)", "(3)"]]
    assert grid_to_markdown([["", ""], [" ", ""]]) == ""


def test_a_full_width_first_row_is_the_caption() -> None:
    md = grid_to_markdown([["Sales by region", "Sales by region"], ["Region", "Sales"], ["North", "5"]])
    assert parse_markdown_table(md) == ("Sales by region", ["Region", "Sales"], [["North", "5"]])


def test_summarize_table_names_caption_columns_rows() -> None:
    md = rows_to_markdown(["State", "", "Permits"], [["Alabama", "", "18,870"], ["Alaska", "x", "209"]], "Checks")
    assert summarize_table(md) == (
        'Table "Checks" with columns State, Permits; 2 rows; first rows: Alabama, 18,870 | Alaska, x, 209.'
    )
    assert summarize_table("no table here") == "Empty table."


def test_index_text_of_a_table_chunk_puts_its_summary_first() -> None:
    assert chunk_body("table", "| a |", "A table.") == "A table.\n| a |"
    assert chunk_body("text", "words", "ignored") == "words"
    assert index_text("Doc", "A > B", "text", "words", None) == "Doc > A > B\nwords"
    assert index_text("Doc", "", "text", "words", None) == "Doc\nwords"
