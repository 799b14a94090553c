"""Idle watchdog of the embedded FalkorDB server (run as ``python -m kbgraph.store.falkor_watchdog``).

Every few seconds it reads ``INFO`` from the server, and exits when the server on the socket is not the
process it watches (its own server gone, another one started in its place). The server is idle when no client but the watchdog is
connected and no command other than the watchdog's own arrived since the last look. After ``--idle``
seconds of idleness it takes the data folder's lock (``--lock``: the one every start, stop, restart and store
connection of the folder holds, kbgraph.store.falkor_server), looks once more (its own server, still idle) and sends
``SHUTDOWN`` (the append-only file is flushed first), then exits; a lock held by someone else counts as activity.
Under the lock no restart can put another server on the socket between the look and the ``SHUTDOWN`` (the client
reconnects by itself, so without it a watchdog could stop the server that replaced its own). It also exits when
the server is gone. Imports only ``redis`` and ``filelock`` so that it costs little memory. Its connection is named
:data:`WATCHDOG_CLIENT`, so that ``EmbeddedFalkorDB.stop_unless_used`` can tell it from a client that uses the
server.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import redis

#: The client name of the watchdog's connection (``CLIENT SETNAME``).
WATCHDOG_CLIENT = "kbgraph-watchdog"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--idle", type=float, required=True)
    ap.add_argument("--lock", default=None, help="the data folder's lock file (falkordb.lock); none: no lock taken")
    args = ap.parse_args(argv)

    import redis

    client = redis.Redis(unix_socket_path=args.socket, socket_timeout=10, client_name=WATCHDOG_CLIENT)
    interval = max(0.5, min(15.0, args.idle / 4))
    idle_since = time.monotonic()
    last_commands: int | None = None
    while True:
        time.sleep(interval)
        try:
            os.kill(args.pid, 0)
        except ProcessLookupError:
            return 0
        try:
            info = client.info()  # server, clients and stats: one command per look
        except redis.exceptions.BusyLoadingError:
            idle_since = time.monotonic()
            continue
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError):
            return 0
        if int(info.get("process_id", args.pid)) != args.pid:
            # another server on our socket: ours is gone (a zombie still answers kill(pid, 0) when nothing reaps
            # it, e.g. under a container's PID 1), and the new one has a watchdog of its own
            return 0
        commands = int(info.get("total_commands_processed", 0))
        others = int(info.get("connected_clients", 1)) - 1
        # our own INFO of the last look (the one that just ran is not counted yet) is not activity
        busy = others > 0 or (last_commands is not None and commands - last_commands > 1)
        last_commands = commands
        if busy:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since >= args.idle:
            if _stop_if_idle(client, args.pid, args.lock):
                return 0
            idle_since, last_commands = time.monotonic(), None  # not idle after all: count anew


def _stop_if_idle(client: redis.Redis, pid: int, lock_path: str | None) -> bool:
    """Under the folder's lock (none when ``lock_path`` is None), ``SHUTDOWN`` the server on the socket if it is
    still process ``pid`` with no other client. Returns False when it was not stopped (the lock is held: a start,
    stop, restart or store connection under way; a client connected), else True (stopped, gone, or not its
    server: the watchdog's work is done)."""
    import redis
    from filelock import FileLock, Timeout

    lock = FileLock(lock_path) if lock_path else None
    try:
        if lock is not None:
            lock.acquire(timeout=0)
    except Timeout:
        return False
    try:
        info = client.info()
        if int(info.get("process_id", pid)) != pid:
            return True
        if int(info.get("connected_clients", 1)) > 1:
            return False
        client.shutdown(save=False)
    except redis.exceptions.TimeoutError:
        return False  # busy: looked at again later
    except (redis.exceptions.ConnectionError, redis.exceptions.ResponseError, OSError):
        pass  # gone, or going
    finally:
        if lock is not None:
            lock.release()
    return True


if __name__ == "__main__":
    raise SystemExit(main())
