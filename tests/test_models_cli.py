"""``kbgraph models`` (kbgraph.embed.prepare ``make_models``): the set-up step that makes a home's models before
its first ingestion. ``--check`` lists what is missing (exit 1) and makes nothing; a child that fails is named with
the end of its output and leaves nothing; the ONNX export made by the verb is the file ingestion then uses, and a
second run makes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbgraph.embed import prepare
from kbgraph.embed.prepare import ModelError, make_models, missing_models
from kbgraph.settings import Settings


def _cli(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("KBGRAPH_", "NEO4J_"))}
    return subprocess.run(
        [sys.executable, "-m", "kbgraph.cli", "models", *args],
        env={**base, "KBGRAPH_HOME": str(home), **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_check_lists_what_a_fresh_home_lacks_and_makes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cli = _cli(home, "--check", "--json")
    assert cli.returncode == 1, cli.stderr
    assert [m["kind"] for m in json.loads(cli.stdout)] == ["onnx", "static"]
    listed = [Path(m["path"]) for m in json.loads(cli.stdout)]
    assert all(p.parent == home / "models" and not p.exists() for p in listed)  # (the weights' hash is cached)
    remote = _cli(home, "--check", KBGRAPH_EMBEDDING_MODEL="openai:text-embedding-3-small")
    assert remote.returncode == 0 and "every model is made" in remote.stdout  # a remote model: nothing to make


def test_a_failing_child_is_named_with_its_output_and_the_others_are_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "no-teacher"
    todo = [["static", str(bad), str(tmp_path / "static-a"), ""], ["unknown", "x", str(tmp_path / "b")]]
    monkeypatch.setattr(prepare, "missing_models", lambda _settings: todo)
    with pytest.raises(ModelError) as caught:
        make_models(Settings(home=tmp_path))
    message = str(caught.value)
    assert f"the static model ({tmp_path / 'static-a'}), exit 1" in message
    assert "no-teacher" in message  # the end of the child's traceback names what it could not read
    assert f"the unknown model ({tmp_path / 'b'}), exit 2: no output" in message
    assert not (tmp_path / "static-a").exists() and not (tmp_path / "b").exists()


@pytest.mark.slow
def test_the_verb_makes_the_export_ingestion_uses_and_then_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = Settings(home=home, static_layers="")
    (export,) = [Path(args[2]) for args in missing_models(settings)]
    cli = _cli(home, KBGRAPH_STATIC_LAYERS="")
    assert cli.returncode == 0, cli.stderr
    assert "made the onnx model in" in cli.stdout and export.is_file()
    assert missing_models(settings) == []  # the file the embedder looks for
    again = _cli(home, KBGRAPH_STATIC_LAYERS="")
    assert again.returncode == 0 and again.stdout.strip() == "every model is made"
