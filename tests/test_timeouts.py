"""Connecting fails in bounded time with one line, usage errors exit 2, and `ingest --wait` says whose lock it
waits for.

* A Bolt endpoint that accepts the TCP connection and never answers (a listener in this test) fails after about
  connect_timeout (it took 3 x connect_timeout before), with a message that says so.
* neo4j:// to a port nobody listens on: stderr is exactly kbgraph's one error line (the driver's "Unable to
  retrieve routing information" log record is dropped).
* `kbgraph ask ""` exits 2 (a usage error), before any store is touched.
* `kbgraph ingest --wait` while another process holds the lock logs "waiting up to N s for the lock held by
  pid ... on ..." and exits 75 after lock_timeout.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbgraph.errors import StoreUnavailable
from kbgraph.settings import Settings
from kbgraph.store import open_store

CONNECT_TIMEOUT = 2.0


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KBGRAPH_", "NEO4J_"))}
    return {**env, "KBGRAPH_HOME": str(tmp_path / "home"), **extra}


@pytest.fixture
def silent_listener() -> Iterator[tuple[int, list[socket.socket]]]:
    """A TCP port that accepts connections and never sends a byte."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                accepted.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join(timeout=2)
    for conn in accepted:
        conn.close()
    server.close()


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.mark.parametrize("scheme", ["bolt", "neo4j"])
def test_silent_bolt_endpoint_fails_within_connect_timeout(
    silent_listener: tuple[int, list[socket.socket]], scheme: str, tmp_path: Path
) -> None:
    port, accepted = silent_listener
    settings = Settings(home=tmp_path, uri=f"{scheme}://127.0.0.1:{port}", connect_timeout=CONNECT_TIMEOUT)
    started = time.monotonic()
    with pytest.raises(
        StoreUnavailable, match=rf"accepted the connection but did not answer within {CONNECT_TIMEOUT:g} s"
    ):
        open_store(settings)
    elapsed = time.monotonic() - started
    assert accepted, "the driver never connected to the listener"
    # a correctness bound, not a benchmark: well under the 3 x connect_timeout it took before
    assert elapsed < CONNECT_TIMEOUT + 2.5, elapsed


def test_neo4j_scheme_dead_port_prints_one_error_line(tmp_path: Path) -> None:
    port = _dead_port()
    cli = subprocess.run(
        [sys.executable, "-m", "kbgraph.cli", "--uri", f"neo4j://127.0.0.1:{port}", "stats"],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 1, cli.stderr
    lines = cli.stderr.splitlines()
    assert len(lines) == 1, cli.stderr
    assert lines[0].startswith(f"error: cannot reach Neo4j at neo4j://127.0.0.1:{port}")


def test_empty_question_is_a_usage_error(tmp_path: Path) -> None:
    for question in ("", "   "):
        cli = subprocess.run(
            [sys.executable, "-m", "kbgraph.cli", "ask", question],
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert cli.returncode == 2, cli.stderr
        assert cli.stderr.splitlines() == [
            'error: the question is empty: ask something, e.g. kbgraph ask "Who founded X?"'
        ]
    assert not (tmp_path / "home").exists()  # refused before any store was opened


def test_wait_says_whose_lock_it_waits_for(falkor_settings: Settings, tmp_path: Path) -> None:
    from kbgraph.ingest.lock import RunLock

    (tmp_path / "a.txt").write_text("Locks keep runs apart.", encoding="utf-8")
    name = "waitlock"
    env = _env(
        tmp_path,
        KBGRAPH_HOME=str(falkor_settings.home),
        KBGRAPH_DATA_DIR=str(falkor_settings.kb_dir),
        KBGRAPH_NAME=name,
        KBGRAPH_FALKOR_IDLE_TIMEOUT="0",
        KBGRAPH_LOCK_TIMEOUT="1",
    )
    with RunLock(falkor_settings.kb_dir, name, wait=False, timeout=0):
        cli = subprocess.run(
            [sys.executable, "-m", "kbgraph.cli", "ingest", "--wait", str(tmp_path / "a.txt")],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert cli.returncode == 75, cli.stderr
    holder = f"pid {os.getpid()} on {socket.gethostname()} since "
    assert f"waiting up to 1 s for the lock held by {holder}" in cli.stderr
    assert "waited 1 s for the lock" in cli.stderr
