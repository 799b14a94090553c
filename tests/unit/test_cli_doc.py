"""docs/cli.md is generated from the Typer app (kbgraph.cli.doc): it fails here when a verb, an option or a help
text changed without `python -m kbgraph.cli.doc --write`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbgraph.cli import app
from kbgraph.cli.doc import DOC, main, render


def test_cli_reference_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), "docs/cli.md is stale: run python -m kbgraph.cli.doc --write"


def test_cli_reference_names_every_verb_and_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import typer

    text = render()
    root = typer.main.get_command(app)

    def walk(cmd: Any, path: str) -> None:  # a click Command of Typer's (read by attribute)
        for param in cmd.params:
            for opt in getattr(param, "opts", []) if param.param_type_name == "option" else []:
                assert f"`{opt}`" in text, f"{path}: {opt} missing"
        for name, sub in getattr(cmd, "commands", {}).items():
            assert f"`{path} {name}`" in text
            walk(sub, f"{path} {name}")

    walk(root, "kbgraph")
    stale = tmp_path / "cli.md"
    stale.write_text("old", encoding="utf-8")
    assert main(["--check", "--doc", str(stale)]) == 1
    assert main(["--write", "--doc", str(stale)]) == 0 and main(["--check", "--doc", str(stale)]) == 0
    assert "is stale" in capsys.readouterr().err
