"""A read of a knowledge base that does not exist, from the command line: ``ask``, ``stats``, ``delete`` and
``tags classes`` exit 66 (KnowledgeBaseNotFound) with a message naming the ingest that makes it, and leave
nothing behind: no folder under the home, no FalkorDB server. A knowledge base that exists is read as before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbgraph.cli import common
from kbgraph.errors import KnowledgeBaseNotFound
from kbgraph.kb import KnowledgeBase


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KBGRAPH_", "NEO4J_"))}
    return {**env, "KBGRAPH_HOME": str(home)}


@pytest.mark.parametrize("verb", [["ask", "Who wrote it?"], ["stats"], ["delete", "doc:x"], ["tags", "classes"]])
def test_a_read_of_an_unknown_kb_is_refused_and_makes_nothing(tmp_path: Path, verb: list[str]) -> None:
    home = tmp_path / "home"
    cli = subprocess.run(
        [sys.executable, "-m", "kbgraph.cli", "--kb", "typo", *verb],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == KnowledgeBaseNotFound.exit_code == 66, cli.stderr
    assert "no knowledge base 'typo'" in cli.stderr and "kbgraph --kb typo ingest FOLDER" in cli.stderr
    assert cli.stdout == ""
    assert not (home / "typo").exists()  # no folder, so no embedded server was started for it


def test_an_existing_kb_is_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """existing_settings lets through a knowledge base whose store exists (made by a first open, as an ingest
    makes it), and refuses it before."""
    monkeypatch.setattr(common.State, "overrides", {"home": str(tmp_path), "name": "made"})
    with pytest.raises(KnowledgeBaseNotFound, match="ingest into it first"):
        common.existing_settings()
    with KnowledgeBase(settings=common.settings()) as kb:
        kb.stats()
    assert common.existing_settings().name == "made"
