"""The docstrings of the public API (the surface of docs/api.md: scripts/api_doc.py's PARTS and every entry point
of the method registry) are Google-style: each names its parameters under ``Args:``, says what it returns under
``Returns:`` (or ``Yields:``) unless it returns None, and names under ``Raises:`` every kbgraph error and built-in
exception its body raises directly (scripts/api_doc.py ``problems``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kbgraph.errors import QueryError
from scripts.api_doc import Entry, parse_docstring, problems, raised_names, surface

#: Entry points whose module another change of issue 59 is rewriting (query/ into rooms): held to the sections
#: once it lands.
PENDING = frozenset({"kbgraph.query.bm25.retrieve_bm25"})


def test_every_docstring_of_the_surface_has_its_sections() -> None:
    entries = [entry for _part, entry in surface() if entry.name not in PENDING]
    assert len(entries) > 80, "the surface was found"
    found = [p for entry in entries for p in problems(entry)]
    assert not found, "docstrings without their sections:\n" + "\n".join(found)


def _fn(limit: int, *, strict: bool = False) -> int:
    """Documented.
    Args:
        limit: at most this many.
        strict: refuse more.
    Returns:
        The limit.
    Raises:
        QueryError: over the limit."""
    if strict and limit > 3:
        raise QueryError("over")
    return limit


def _gen() -> Iterator[int]:
    """Counts.
    Yields:
        0, 1, 2."""
    yield from range(3)


def test_a_missing_section_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = Entry("tests._fn", _fn, "function", _fn)
    assert problems(entry) == []
    assert problems(Entry("tests._gen", _gen, "function", _gen)) == []
    assert raised_names(_fn) == ["QueryError"]
    full = _fn.__doc__ or ""
    for cut, says in [
        ("    Raises:\n        QueryError: over the limit.", "raises QueryError"),
        ("    Returns:\n        The limit.\n", "no Returns section"),
        ("        strict: refuse more.\n", "'strict' not in Args"),
    ]:
        monkeypatch.setattr(_fn, "__doc__", full.replace(cut, ""))
        assert any(says in p for p in problems(entry)), (cut, problems(entry))
    monkeypatch.setattr(_fn, "__doc__", full.replace("strict: refuse", "loose: refuse"))
    assert any("'loose', which is no parameter" in p for p in problems(entry))
    monkeypatch.setattr(_fn, "__doc__", full.replace("QueryError: over", "QueryErorr: over"))
    assert any("'QueryErorr', which is no exception" in p for p in problems(entry))
    monkeypatch.setattr(_fn, "__doc__", None)
    assert problems(entry) == ["tests._fn: no docstring"]


def test_sections_are_parsed() -> None:
    doc = parse_docstring("""Summary line.

    More prose.
    Args:
        name: the name, on
            two lines.
        **options: the rest.
    Returns:
        What it gives.
    Raises:
        pydantic.ValidationError: a bad value.""")
    assert doc.body == ["Summary line.", "", "More prose."]
    assert doc.entries("Args") == [("name", "the name, on two lines."), ("**options", "the rest.")]
    assert doc.sections["Returns"] == ["What it gives."]
    assert doc.entries("Raises") == [("pydantic.ValidationError", "a bad value.")]
