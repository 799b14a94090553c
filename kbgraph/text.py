"""One home for small text helpers and for the forms a chunk's text takes.

A chunk is read in three forms, and every place that needs one imports it from here so they cannot drift:

* ``chunk_heading(title, section_path)`` — ``"title > section path"`` (or the title alone);
* ``chunk_body(kind, text, summary)`` — what the chunk says: a table's summary line before its Markdown,
  any other chunk's text (PIKE-RAG §5.2.2: a table is represented by its summary and its content);
* ``index_text(...)`` — heading, newline, body: the text a chunk's vector is embedded from at ingestion
  (``kbgraph.ingest.embed_layers``) and the document the BM25 baseline indexes (``kbgraph.query.bm25``),
  so sparse and dense retrieval see the same text.

The prompts' context uses ``chunk_body`` under the document title (``kbgraph.query.prompts``). A table chunk's
text is a Markdown pipe table, read back by ``parse_markdown_table`` (ingestion's table summaries and the
evidence of an offline answer).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

_WS = re.compile(r"\s+")


def one_line(message: Any, limit: int = 300, *, empty: str = "") -> str:
    """``message`` (any object, usually an exception or a log line) as one line of at most ``limit`` characters:
    whitespace runs collapsed to one space, an over-long text cut with a trailing ``…``; ``empty`` when nothing
    is left (e.g. ``"unknown error"``)."""
    s = _WS.sub(" ", str(message)).strip()
    if not s:
        return empty
    return s if len(s) <= limit else s[: limit - 1] + "…"


def utc_now() -> str:
    """The current UTC time as ISO 8601 to the second, e.g. ``"2026-11-23T10:04:05+00:00"``."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def chunk_heading(title: str | None, section_path: str | None) -> str:
    """``"title > section path"``, or the title alone when the chunk sits directly under its document."""
    title = title or ""
    return f"{title} > {section_path}" if section_path else title


def chunk_body(kind: str | None, text: str | None, summary: str | None) -> str:
    """A chunk's content: a table's summary, a newline and its Markdown; otherwise the text as stored."""
    text = text or ""
    if kind == "table" and summary:
        return f"{summary}\n{text}"
    return text


def index_text(
    title: str | None, section_path: str | None, kind: str | None, text: str | None, summary: str | None
) -> str:
    """The text a chunk is embedded from and BM25-indexed as: ``chunk_heading``, a newline, ``chunk_body``."""
    return f"{chunk_heading(title, section_path)}\n{chunk_body(kind, text, summary)}"


def strip_disambiguator(title: str) -> str:
    """'Anthony Robinson (Unitarian)' -> 'Anthony Robinson' (Wikipedia's parenthetical disambiguator)."""
    if not title.rstrip().endswith(")"):  # most titles (the learned ranker asks ~90 a question): no regex
        return title.strip()
    return _DISAMBIGUATOR.sub("", title).strip()


_DISAMBIGUATOR = re.compile(r"\s*\([^()]*\)\s*$")


def contains_phrase(text: str, phrase: str, *, word: Callable[[str], bool] = str.isalnum, prefix: bool = False) -> bool:
    """``phrase`` (non-empty) in ``text`` on word boundaries: at an end of ``text`` or beside a character for which
    ``word`` is false (``str.isalnum`` by default); with ``prefix``, at the start of a word only. Every occurrence is
    tried, overlapping ones too, as a regex search would (no pattern compiled per phrase)."""
    at = text.find(phrase)
    while at >= 0:
        end = at + len(phrase)
        if (at == 0 or not word(text[at - 1])) and (prefix or end == len(text) or not word(text[end])):
            return True
        at = text.find(phrase, at + 1)
    return False


def parse_markdown_table(markdown: str) -> tuple[str | None, list[str], list[list[str]]]:
    """(caption, header, rows) of a Markdown pipe table as ingestion writes a table chunk's text
    (``kbgraph.ingest.tables.rows_to_markdown``; the first non-table line, bold markers removed, is the caption)."""
    caption = None
    table_lines: list[str] = []
    for line in markdown.splitlines():
        s = line.strip()
        if s.startswith("|"):
            table_lines.append(s)
        elif s and caption is None and not table_lines:
            caption = s.strip("*").strip()
    rule = re.compile(r"\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*")
    rows = [split_table_row(line) for line in table_lines if not rule.fullmatch(line)]
    if not rows:
        return caption, [], []
    return caption, rows[0], rows[1:]


def split_table_row(line: str) -> list[str]:
    """The cells of one line of a Markdown pipe table, stripped, ``\\|`` unescaped."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    cells = re.split(r"(?<!\\)\|", body)
    return [c.strip().replace("\\|", "|") for c in cells]
