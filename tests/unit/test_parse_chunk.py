"""Parsing and chunking of small texts (kbgraph.ingest.parse, kbgraph.ingest.chunk): plain text and passage
corpora from tmp files, elements built in memory; sentence splitting replaced by a naive splitter (no spaCy)."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pytest

from kbgraph.errors import IngestError
from kbgraph.ingest import chunk as chunk_mod
from kbgraph.ingest import nlp
from kbgraph.ingest.chunk import build_structure
from kbgraph.ingest.decode import decode_text
from kbgraph.ingest.parse import (
    Element,
    ParsedDocument,
    clean_text,
    normalize_elements,
    parse_bytes,
    parse_file,
    parse_passages_jsonl,
    skip_reason,
    warn,
)
from kbgraph.ingest.parse_common import WARNINGS, dispatch
from kbgraph.models import stable_id


def test_normalize_elements_cleans_demotes_and_clamps() -> None:
    raw = [
        {"kind": "heading", "text": "  Intro\x07  ", "level": 9},
        {"kind": "text", "text": "a\x0cb   c\n d"},
        {"kind": "text", "text": " \t "},  # empty: dropped
        {"kind": "text", "text": "--- ..."},  # no word character: dropped
        {"kind": "heading", "text": "word " * 31, "level": 1},  # too long for a heading
        {"kind": "table", "text": "| a | b |\n|---|---|\n| 1 | 2 |", "page": 3},
    ]
    out = normalize_elements(raw)  # type: ignore[arg-type]
    assert [(e.kind, e.level) for e in out] == [("heading", 6), ("text", None), ("text", None), ("table", None)]
    assert out[0].text == "Intro" and out[1].text == "a b c d"
    assert out[3].markdown == out[3].text and "\n" in out[3].text and out[3].page == 3


def test_clean_text_removes_control_characters_but_keeps_lines() -> None:
    assert clean_text("a\x00b\tc\nd\x1fe\r") == "ab\tc\nd e\r"


def test_plain_text_paragraphs_at_blank_lines() -> None:
    title, raw = parse_bytes(b"First line\nstill first.\r\n\r\nSecond.\n \nThird.", ".txt", "x.txt")
    assert title is None
    assert [r["text"] for r in raw] == ["First line\nstill first.", "Second.", "Third."]


def test_decode_text_byte_order_marks_and_utf8() -> None:
    assert decode_text("héllo".encode("utf-16"), "x") == "héllo"
    assert decode_text(b"\xef\xbb\xbfhi", "x") == "hi"
    assert decode_text("naïve".encode(), "x") == "naïve"


def test_parse_file_of_a_text_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("Alpha beta.\n\nGamma delta.", encoding="utf-8")
    doc = parse_file(path, max_bytes=1000)
    assert doc.title == "notes" and doc.mime == "text/plain" and doc.uri == path.resolve().as_uri()
    assert [e.text for e in doc.elements] == ["Alpha beta.", "Gamma delta."]
    assert doc.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("empty.txt", b"", "empty file"),
        ("blank.txt", b"  \n\t ", "only whitespace"),
        ("big.txt", b"x" * 2000, "too large"),
        ("data.bin", b"\x00\x01", "cannot ingest data.bin"),
        ("corpus.jsonl", b"{}", "parse_passages_jsonl"),
    ],
)
def test_parse_file_refuses_with_the_fix(tmp_path: Path, name: str, content: bytes, message: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(IngestError, match=message):
        parse_file(path, max_bytes=1000)


def test_skip_reason_by_name() -> None:
    assert skip_reason(Path("a.pdf")) is None
    assert skip_reason(Path("a.zip"))
    assert skip_reason(Path("a.mp3"))


def test_passage_corpus(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    lines = [{"id": "p 1", "title": "T\x07one", "text": "Some   text."}, {"text": "No id."}, {"id": "p3", "text": ""}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n", encoding="utf-8")
    docs = list(parse_passages_jsonl(path))
    assert [d.title for d in docs] == ["Tone", "2", "p3"]
    assert docs[0].uri.endswith("#p%201") and docs[0].elements[0].text == "Some text."
    assert docs[2].elements == [] and docs[0].mime == "application/x-ndjson"


@pytest.mark.parametrize(
    "lines, message",
    [
        (['{"id": "a", "text": "x"}', '{"id": "a", "text": "y"}'], "duplicate passage id 'a'"),
        (['{"title": "t", "body": "x"}'], "found the keys body, title"),
        (["[1, 2]"], "found a JSON array"),
        (["not json"], "not valid UTF-8 JSON"),
    ],
)
def test_a_passage_corpus_line_that_is_no_passage(tmp_path: Path, lines: list[str], message: str) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(IngestError, match=message):
        list(parse_passages_jsonl(path))


def test_warnings_go_to_the_document_being_parsed_else_to_the_log(caplog: pytest.LogCaptureFixture) -> None:
    sink: list[str] = []
    token = WARNINGS.set(sink)
    try:
        warn("table   1\nskipped")
        warn("table 1 skipped")  # the same warning once
    finally:
        WARNINGS.reset(token)
    assert sink == ["table 1 skipped"]
    with caplog.at_level(logging.WARNING, logger="kbgraph.ingest.parse"):
        warn("outside")
    assert "outside" in caplog.text


def test_the_dispatch_is_registered_for_the_parsers_of_attachments() -> None:
    assert dispatch() == (parse_bytes, skip_reason)


def doc(*elements: Element) -> ParsedDocument:
    return ParsedDocument(uri="file:///d.txt", title="D", mime="text/plain", sha256="0" * 64, elements=list(elements))


def test_sections_follow_heading_levels_and_chunks_stay_in_their_section() -> None:
    d = doc(
        Element(kind="text", text="Preface."),
        Element(kind="heading", text="A", level=1),
        Element(kind="text", text="In A."),
        Element(kind="heading", text="B", level=2),
        Element(kind="text", text="In B.", page=2),
        Element(kind="text", text="Also in B."),
        Element(kind="heading", text="C", level=1),
        Element(kind="table", text="| x | y |\n|---|---|\n| 1 | 2 |"),
    )
    document, sections, chunks = build_structure(d, chunk_tokens=50)
    assert document.id == stable_id("doc", "file:///d.txt")
    assert [(s.path, s.level) for s in sections] == [("A", 1), ("A > B", 2), ("C", 1)]
    by_path = {s.path: s for s in sections}
    assert by_path["A > B"].parent_id == by_path["A"].id and by_path["C"].parent_id == document.id
    assert [(c.section_path, c.kind, c.order) for c in chunks] == [
        ("", "text", 0),
        ("A", "text", 1),
        ("A > B", "text", 2),
        ("C", "table", 3),
    ]
    assert chunks[2].text == "In B.\n\nAlso in B." and chunks[2].page == 2
    assert chunks[0].parent_id == document.id and chunks[3].summary
    # ids are content-derived: the same document gives the same ids
    assert [c.id for c in build_structure(d, chunk_tokens=50)[2]] == [c.id for c in chunks]


def test_a_long_block_is_packed_by_sentences_with_overlap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        nlp, "split_sentences", lambda texts: [[s.strip() + "." for s in t.split(".") if s.strip()] for t in texts]
    )
    text = "one two three. four five six. seven eight nine. ten eleven twelve."
    _, _, chunks = build_structure(doc(Element(kind="text", text=text)), chunk_tokens=7, overlap_sentences=1)
    assert [c.text for c in chunks] == [
        "one two three. four five six.",
        "four five six. seven eight nine.",
        "seven eight nine. ten eleven twelve.",
    ]
    _, _, chunks = build_structure(doc(Element(kind="text", text=text)), chunk_tokens=7, overlap_sentences=0)
    assert [c.text for c in chunks] == ["one two three. four five six.", "seven eight nine. ten eleven twelve."]


def test_an_over_long_sentence_is_cut_into_windows() -> None:
    assert chunk_mod._windows("a b c d e", 2) == ["a b", "c d", "e"]
    with pytest.raises(ValueError):
        build_structure(doc(Element(kind="text", text="x")), chunk_tokens=0)


def test_a_document_of_headings_only_keeps_them_findable() -> None:
    _, sections, chunks = build_structure(doc(Element(kind="heading", text="Only", level=1)))
    assert len(sections) == 1 and [c.text for c in chunks] == ["Only"]
