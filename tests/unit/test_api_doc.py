"""docs/api.md is generated from the docstrings of the public API (scripts/api_doc.py): it fails here when a
docstring, a signature or a row of the method registry changed without `python scripts/api_doc.py --write`."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbgraph.query.methods.registry import METHODS
from scripts.api_doc import DOC, PARTS, main, registry_entries, render, resolve


def test_api_reference_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), "docs/api.md is stale: run python scripts/api_doc.py --write"


def test_api_reference_shows_every_part_and_every_method_entry_point() -> None:
    text = render()
    for part in PARTS:
        assert f"## {part.title}\n" in text
        for path in part.objects:
            resolve(path)  # every object of the surface exists
            assert f"`{path.replace(':', '.')}`" in text
    entries = {entry.obj: entry.name for entry in registry_entries()}
    for row in METHODS.values():
        assert f"### `{entries[row.run]}`" in text, row.name  # each row's run, documented under its own name
        assert f"| `{row.name}` | {row.kind} |" in text
    assert "| `QueryError` | `KBGraphError` | 1 |" in text and "| `LockTimeout` | `KBGraphError` | 75 |" in text


def test_a_docstring_edit_makes_the_reference_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kbgraph.query import ask

    doc = tmp_path / "api.md"
    assert main(["--write", "--doc", str(doc)]) == 0 and main(["--check", "--doc", str(doc)]) == 0
    monkeypatch.setattr(ask.clean_question, "__doc__", "Changed.\n    Args:\n        question: the question.")
    assert main(["--check", "--doc", str(doc)]) == 1
    assert "is stale" in capsys.readouterr().err
    assert main(["--check", "--doc", str(tmp_path / "missing.md")]) == 1
