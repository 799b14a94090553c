"""Process and port helpers shared by the server launchers (embedded FalkorDB, local Neo4j, local LLM):
liveness of a pid, SIGTERM-then-SIGKILL, waiting for a starting server, and 127.0.0.1 port checks."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """True if ``pid`` is a live (not zombie) process; reaps it if it is our exited child."""
    with contextlib.suppress(ChildProcessError, OSError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = proc_stat(pid)
    return not (fields and fields[0] == "Z")


def proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after "pid (comm)", i.e. from field 3 (state) on: ``[0]`` the state,
    ``[11]``/``[12]`` utime/stime and ``[19]`` the start time (clock ticks). None when unreadable (no /proc, the
    process is gone). The command name may hold spaces and parentheses, so the split is at its last ")"."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()


def terminate(pid: int, timeout: float, kill_timeout: float = 10.0, *, child: subprocess.Popen | None = None) -> bool:
    """SIGTERM ``pid``, then SIGKILL if it still lives after ``timeout`` seconds; wait up to ``kill_timeout``
    more. ``child``: the Popen of this process when we started it, reaped here so that it leaves no zombie
    and no "still running" warning. Returns True if the process is gone."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + kill_timeout
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
    if child is not None and child.pid == pid:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=1)
    return not pid_alive(pid)


def wait_ready(
    pid: int,
    ready: Callable[[], bool],
    timeout: float,
    *,
    exited: Callable[[], Exception],
    late: Callable[[], Exception],
    interval: float = 0.5,
) -> None:
    """Wait for the starting server process ``pid`` until ``ready()`` returns True.

    Each round (every ``interval`` seconds): raises ``exited()`` when the process is gone (the caller's error,
    usually naming the cause found in the server's log), returns once ``ready()`` is True, raises ``late()``
    when ``timeout`` seconds have passed. ``ready`` may itself raise to stop waiting (e.g. a failure the log
    reports while the process lives on). Stopping the process after an error is the caller's job."""
    deadline = time.monotonic() + timeout
    while True:
        if not pid_alive(pid):
            raise exited()
        if ready():
            return
        if time.monotonic() > deadline:
            raise late()
        time.sleep(interval)


def port_free(port: int) -> bool:
    """True if 127.0.0.1:port can be bound (a listener on 0.0.0.0 or 127.0.0.1 makes it False)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # ignore TIME_WAIT leftovers
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            if e.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def port_open(port: int, timeout: float = 0.5) -> bool:
    """True if something accepts TCP connections on 127.0.0.1:port within ``timeout`` seconds."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False
