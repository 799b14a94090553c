"""The embedded FalkorDB server's folder lock and who a stop may signal (issue 56, the reload after a compaction):
a stop, a restart and the idle watchdog's stop hold the folder's lock, so that a start waits for them instead of
racing them, and a stop signals only the folder's own server, never a process that took a stale pid file's
number (another knowledge base's server). Real redis-server processes, each test in folders of its own."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import redis
from filelock import FileLock

from kbgraph.process import pid_alive
from kbgraph.store.falkor_server import EmbeddedFalkorDB


def _servers_on(socket: Path) -> list[int]:
    """Pids of the live redis-server processes on ``socket``: their title (as redis-server sets it) is
    ``redis-server unixsocket:<socket>``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            title = (proc / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
            stat = (proc / "stat").read_text().rsplit(")", 1)[-1].split()
            if title.endswith(f"redis-server unixsocket:{socket}") and stat[0] != "Z":
                found.append(int(proc.name))
    return found


def _answering_pid(socket: Path) -> int | None:
    """The process id of the server that answers on ``socket`` (None: nothing answers)."""
    try:
        return int(redis.Redis(unix_socket_path=str(socket), socket_timeout=5).info("server")["process_id"])
    except (redis.exceptions.RedisError, OSError):
        return None


@contextlib.contextmanager
def _server(folder: Path, idle: float = 0) -> Iterator[EmbeddedFalkorDB]:
    """The embedded server of ``folder``, started; every redis-server on its socket killed at the end."""
    server = EmbeddedFalkorDB(folder, idle_timeout=idle, start_timeout=60)
    server.ensure_running()
    try:
        yield server
    finally:
        for pid in _servers_on(server.socket):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
        server.stop(timeout=5)


def test_a_stop_never_signals_the_process_that_took_a_stale_pid_files_number(tmp_path: Path) -> None:
    """A pid file left by a server that died unannounced (killed, out of memory, a crash) names a number the
    system gives to the next process, here another knowledge base's server: stopping, stopping-unless-used or
    restarting the first knowledge base's (absent) server must leave that process alone, and its own start must
    start a server of its own. Red before: ``stop`` sent SIGTERM to any live process its pid file named."""
    with _server(tmp_path / "kb-b") as other:
        pid = other.status().pid
        assert pid is not None
        mine = EmbeddedFalkorDB(tmp_path / "kb-a", idle_timeout=0, start_timeout=60)
        mine.data_dir.mkdir(parents=True)
        stops: list[Callable[[], bool]] = [
            lambda: mine.stop(timeout=5),
            lambda: mine.stop_unless_used(),
            lambda: mine.restart_unless_used(),
            lambda: mine.stop(timeout=5),
        ]
        for stop in stops:
            mine.pidfile.write_text(str(pid))  # stale: kb-a's server is gone, its number reused by kb-b's
            assert stop() is False
            time.sleep(0.2)
            assert _answering_pid(other.socket) == pid, "another knowledge base's server was stopped"
        assert not mine.pidfile.exists()  # the stale file removed by the stop
        try:
            mine.pidfile.write_text(str(pid))
            mine.ensure_running()
            assert _answering_pid(mine.socket) not in (None, pid)  # a server of its own
            assert _answering_pid(other.socket) == pid
        finally:
            mine.stop(timeout=5)
        assert _answering_pid(other.socket) == pid


def test_a_start_waits_for_a_stop_of_the_same_server_under_way(tmp_path: Path) -> None:
    """A stop under way (a reload's, kbgraph serve's stop of an evicted knowledge base, ``kbgraph store stop``)
    and a start of the same folder's server (another store connecting): the start waits for the folder's lock and
    then starts the one server that answers. Red before: the stop did not hold the lock, so the start went on
    (its server up while the old one died), and the stop then deleted the new server's pid file and socket
    (tests/test_serve_keys.py under kbgraph serve: 'No such file or directory' for the socket; the next start
    put a second redis-server on the same append-only file). The old server is frozen (SIGSTOP) so that its stop
    lasts seconds (its SHUTDOWN unanswered, then SIGTERM, then SIGKILL after 6 s): the start, 1 s into it, falls
    within it on any machine."""
    with _server(tmp_path / "kb") as server:
        old = server.status().pid
        assert old is not None
        os.kill(old, signal.SIGSTOP)
        stopper = threading.Thread(target=lambda: server.stop(timeout=6), daemon=True)
        stopper.start()
        time.sleep(1.0)  # the stop holds the lock (before: has read the pid file and waits for the frozen server)
        other = EmbeddedFalkorDB(server.data_dir, idle_timeout=0, start_timeout=60)
        other.ensure_running()
        stopper.join(60)
        assert not stopper.is_alive()
        new = _answering_pid(other.socket)
        assert new is not None and new != old, "the new server's socket was deleted by the stop"
        assert other.status().running and other.status().pid == new
        assert _servers_on(other.socket) == [new]  # one server on the folder's files


def test_the_watchdog_stops_no_server_while_the_folders_lock_is_held(tmp_path: Path) -> None:
    """The idle watchdog's stop takes the folder's lock too: while a start, a restart or a store's connection
    holds it, the watchdog leaves the server up (it could otherwise stop a server a restart put on its socket, or
    one a store has just been told is up), and stops it once the lock is free. Red before: the watchdog ignored
    the lock (stopped within ~2 s of idleness)."""
    with _server(tmp_path / "kb", idle=1.0) as server:
        pid = server.status().pid
        assert pid is not None
        with FileLock(str(server.lockfile)):  # as a start, a restart or a connecting store of another process holds it
            time.sleep(4.0)  # 4 idle seconds, the watchdog looking every 0.5 s
            assert _answering_pid(server.socket) == pid, "the watchdog stopped the server under the folder's lock"
        deadline = time.monotonic() + 30  # watched by its pid: a ping would be activity to the watchdog
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not pid_alive(pid)  # idle, lock free: stopped
