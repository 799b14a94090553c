"""kbgraph.text: the one home of the chunk's text forms and the small helpers."""

from kbgraph.text import chunk_body, chunk_heading, index_text, one_line, utc_now


def test_one_line_collapses_and_cuts() -> None:
    assert one_line("a\n  b\tc") == "a b c"
    cut = one_line("x" * 500, limit=10)
    assert cut == "x" * 9 + "…" and len(cut) == 10
    assert one_line("   ", empty="unknown error") == "unknown error"
    assert one_line(ValueError("bad\nthing")) == "bad thing"


def test_text_forms() -> None:
    assert chunk_heading("Doc", "A > B") == "Doc > A > B"
    assert chunk_heading("Doc", "") == "Doc"
    assert chunk_body("table", "| a |", "Sales by year") == "Sales by year\n| a |"
    assert chunk_body("text", "hello", "ignored") == "hello"
    assert index_text("Doc", None, "text", "hello", None) == "Doc\nhello"


def test_utc_now_is_iso_seconds() -> None:
    s = utc_now()
    assert s.endswith("+00:00") and len(s) == 25
