"""A fresh home's models made in the background (``kbgraph.embed.prepare``): what is missing, a child that makes
the ONNX export while the run parses (the run then finds it made and exports nothing itself), and a child still
running when the run ends stopped cleanly, its own child (the static build's interpreter) with it."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest

from kbgraph.embed import clear_cache, missing_models, onnx_model_path, prepare, prepare_models
from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings


def _settings(tmp_path: Path, **over: Any) -> Settings:
    return Settings(home=tmp_path / "home", static_models_dir=tmp_path / "static", falkor_idle_timeout=0, **over)


def _running_with(text: str) -> list[int]:
    """Pids of the processes whose command line names ``text``."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if text in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    pids.append(int(proc.name))
            except OSError:
                continue
    return pids


def test_what_a_fresh_home_lacks(tmp_path: Path) -> None:
    s = _settings(tmp_path)
    todo = missing_models(s)
    assert [t[0] for t in todo] == ["onnx", "static"]
    export, static = Path(todo[0][2]), Path(todo[1][2])
    assert export == onnx_model_path(s) and static.parent == tmp_path / "static"
    export.parent.mkdir(parents=True, exist_ok=True)
    export.with_name(export.name + ".failed").write_text("an earlier export failed\n")  # not tried again
    assert [t[0] for t in missing_models(s)] == ["static"]
    static.mkdir(parents=True, exist_ok=True)
    (static / "config.json").write_text("{}")
    assert missing_models(s) == []
    assert missing_models(_settings(tmp_path, embedding_model="openai:text-embedding-3-small")) == []
    assert [t[0] for t in missing_models(_settings(tmp_path / "b", static_layers=""))] == ["onnx"]
    assert missing_models(_settings(tmp_path / "c", static_layers="", embedding_backend="torch")) == []


def test_a_child_still_running_at_the_end_is_stopped_with_its_own_child(tmp_path: Path) -> None:
    s = _settings(tmp_path, static_layers="Entity")
    out = Path(missing_models(s)[-1][2])
    with prepare_models(s) as children:
        mine = {c.pid for c in children}
        deadline = time.monotonic() + 60
        while not (builders := [p for p in _running_with(str(out.parent)) if p not in mine]):
            assert time.monotonic() < deadline, "the static build's own interpreter never started"
            time.sleep(0.2)
    assert all(c.returncode not in (0, None) for c in children)
    time.sleep(0.5)
    assert not [p for p in builders if p in _running_with(str(out.parent))]  # no orphan left distilling
    assert not (out / "config.json").exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left


@pytest.mark.slow
def test_the_child_makes_the_export_and_the_run_uses_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = _settings(tmp_path, static_layers="", name="prep", data_dir=tmp_path / "falkordb")
    export = onnx_model_path(s)
    assert export is not None and not export.exists()
    with prepare_models(s) as children:
        assert [c.args[3] for c in children] == ["onnx"]  # type: ignore[index]  # (argv: python -m module onnx ...)
        assert children[0].wait(timeout=600) == 0
    assert export.is_file()  # made by the child

    doc = tmp_path / "note.txt"
    doc.write_text("Grace Hopper wrote the first compiler, A-0, in 1952 for the UNIVAC I.\n", encoding="utf-8")
    missing = [["onnx", "model folder", str(export)]]  # the run starts its child (which finds the file made)
    monkeypatch.setattr(prepare, "missing_models", lambda _settings: missing)
    clear_cache()
    caplog.set_level(logging.INFO, logger="kbgraph")
    try:
        with KnowledgeBase(settings=s) as kb:
            report = kb.ingest([doc])
            assert report.status == "completed" and report.added == 1
            assert kb.ask("Who wrote the A-0 compiler?", method="dense").chunks
    finally:
        clear_cache()
        from kbgraph.store.falkor_server import EmbeddedFalkorDB

        EmbeddedFalkorDB(s.kb_dir).stop()
    messages = [r.getMessage() for r in caplog.records]
    assert any("making the onnx model in the background" in m for m in messages)  # the run started it
    assert not any(m.startswith("exported ") for m in messages), "the run exported in its own process"
