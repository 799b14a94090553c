"""The console script starts an existing knowledge base's embedded store before it imports its verbs
(kbgraph.launch.prestart, FalkorDBStore.prestart), and creates nothing for a knowledge base that does not exist."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from kbgraph.launch import main, prestart
from kbgraph.settings import Settings
from kbgraph.store import open_store
from kbgraph.store.falkor_server import EmbeddedFalkorDB


def _join_prestarts(timeout: float = 120.0) -> int:
    """Wait for the prestart threads of this process; how many there were."""
    threads = [t for t in threading.enumerate() if t.name == "kbgraph-prestart"]
    for t in threads:
        t.join(timeout)
    return len(threads)


@pytest.fixture
def stopped_kb(tmp_path: Path) -> Settings:
    """A knowledge base with a store on disk and its embedded server stopped."""
    settings = Settings(home=tmp_path, name="kb1", falkor_idle_timeout=0)
    store = open_store(settings)
    store.ensure_schema()
    store.close()
    EmbeddedFalkorDB(settings.kb_dir).stop()
    assert not EmbeddedFalkorDB(settings.kb_dir).status().running
    return settings


def test_ask_starts_the_stopped_store_before_the_verbs_load(stopped_kb: Settings) -> None:
    server = EmbeddedFalkorDB(stopped_kb.kb_dir)
    try:
        t0 = time.monotonic()
        starting = prestart(["--home", str(stopped_kb.home), "--kb", "kb1", "ask", "What is in it?"])
        assert time.monotonic() - t0 < 1.0  # it does not wait for the server
        assert starting is not None and _join_prestarts() == 1
        assert server.status().running
    finally:
        server.stop()


def test_the_console_script_waits_for_the_start_when_the_verb_ends_first(
    stopped_kb: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an empty question fails before the store is opened; the start must still end (its last step starts the
    # server's idle watchdog) before the process does
    finished: list[bool] = []
    start = EmbeddedFalkorDB.ensure_running

    def slow_start(self: EmbeddedFalkorDB) -> Path:
        time.sleep(2.0)
        try:
            return start(self)
        finally:
            finished.append(True)

    monkeypatch.setattr(EmbeddedFalkorDB, "ensure_running", slow_start)
    monkeypatch.setattr(sys, "argv", ["kbgraph", "--home", str(stopped_kb.home), "--kb", "kb1", "ask", ""])
    try:
        assert main() == 2
        assert finished == [True]
    finally:
        EmbeddedFalkorDB(stopped_kb.kb_dir).stop()


def test_other_verbs_and_unknown_knowledge_bases_start_nothing(stopped_kb: Settings) -> None:
    home = str(stopped_kb.home)
    assert prestart(["--home", home, "--kb", "kb1", "stats"]) is None  # not a verb that opens the store first
    assert prestart(["--home", home, "--kb", "nope", "ask", "q"]) is None  # no such knowledge base
    assert prestart(["--home", home, "--kb", "kb1", "--uri", "bolt://127.0.0.1:1", "ask", "q"]) is None  # not embedded
    _join_prestarts()
    assert not EmbeddedFalkorDB(stopped_kb.kb_dir).status().running
    assert not (stopped_kb.home / "nope").exists()  # a read of an unknown knowledge base creates nothing


CONSOLE = """
import atexit, sys
atexit.register(lambda: print("atexit ran"))  # no flush: the exit must flush it
sys.argv = ["kbgraph", "--home", sys.argv[1], "--kb", "kb1", "ask", ""]
from kbgraph.launch import console
console()
print("not reached")
"""


def test_the_console_script_exits_with_the_code_after_the_atexit_handlers(stopped_kb: Settings) -> None:
    """After ``ask`` the console script ends without Python's teardown (os._exit), but as an exit would: the
    verb's exit code (2: an empty question), the atexit handlers run, their output flushed."""
    import subprocess

    try:
        proc = subprocess.run(
            [sys.executable, "-c", CONSOLE, str(stopped_kb.home)], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout.splitlines() == ["atexit ran"]
        assert "the question is empty" in proc.stderr
    finally:
        EmbeddedFalkorDB(stopped_kb.kb_dir).stop()
