"""The lock that keeps two ingestion runs of one knowledge base apart (kbgraph.ingest.pipeline).

``open_run_lock`` picks it by the store: Neo4j, a database several machines may write to, holds an ingest
lease in the database (``kbgraph.ingest.lease``), or, with ``ingest_writers = "claims"``, per-file claims that let
several runs write at once (``kbgraph.ingest.claims``); the embedded FalkorDB store, whose data lives in the knowledge
base's folder, the file lock of this module (``RunLock``). Both say the same when held: exit 75 naming the
holder, or ``--wait``.

``<kb_dir>/ingest.lock`` is a file lock (``filelock``: released by the OS when its process dies, even by
kill -9). Its holder writes who it is to ``<kb_dir>/ingest.lock.owner`` ("pid 123 on host since <UTC time>"),
so a run that has to wait can say whose lock it waits for.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock, Timeout

from kbgraph.errors import LockTimeout
from kbgraph.ingest.claims import ClaimLock
from kbgraph.ingest.lease import LeaseLock
from kbgraph.text import utc_now

if TYPE_CHECKING:
    from kbgraph.settings import Settings
    from kbgraph.store import GraphStore

log = logging.getLogger("kbgraph.ingest")


def open_run_lock(store: GraphStore, settings: Settings, *, wait: bool, prune: bool = False) -> IngestLock:
    """The ingestion lock of ``store`` (not yet held: use it as ``with``): when the store has a lease key (Neo4j),
    a ``ClaimLock`` (per-file claims, several runs at once) with ``settings.ingest.ingest_writers`` "claims" and no
    ``prune``, else a ``LeaseLock`` (the whole knowledge base, one run at a time); both with TTL
    ``settings.ingest.lease_ttl`` s. Without a lease key, the ``RunLock`` of ``settings.kb_dir``. Each waits up to
    ``settings.ingest.lock_timeout`` s with ``wait``; ``check()`` before a write raises once the lock is lost (a
    lease or claims only)."""
    if store.lease_key() is None:
        return RunLock(settings.kb_dir, settings.name, wait=wait, timeout=settings.ingest.lock_timeout)
    if settings.ingest.ingest_writers == "claims" and not prune:
        return ClaimLock(
            store, settings.name, wait=wait, timeout=settings.ingest.lock_timeout, ttl=settings.ingest.lease_ttl
        )

    return LeaseLock(
        store, settings.name, wait=wait, timeout=settings.ingest.lock_timeout, ttl=settings.ingest.lease_ttl
    )


def lock_holder(lock_path: Path) -> str:
    """Who holds ``lock_path``, as its holder recorded it ("pid 123 on host since ..."), or a phrase saying
    it is unknown."""
    try:
        text = lock_path.with_name(lock_path.name + ".owner").read_text(encoding="utf-8").strip()
    except OSError:
        text = ""
    return text or "another process (it recorded no owner)"


def claim(lock_path: Path) -> None:
    """Record this process as the holder of ``lock_path`` (call once the lock is held)."""
    since = utc_now()
    with contextlib.suppress(OSError):
        lock_path.with_name(lock_path.name + ".owner").write_text(
            f"pid {os.getpid()} on {socket.gethostname()} since {since}\n", encoding="utf-8"
        )


class RunLock:
    """``with RunLock(kb_dir, name, wait=..., timeout=...):`` holds the knowledge base's ingestion lock.
    Raises LockTimeout at once when another run holds it and ``wait`` is False; with ``wait``, logs a warning
    "waiting up to N s for the lock held by <holder>" and raises LockTimeout after ``timeout`` seconds."""

    def __init__(self, kb_dir: Path, name: str, *, wait: bool, timeout: float):
        self.path = Path(kb_dir) / "ingest.lock"
        self.name = name
        self.wait = wait
        self.timeout = timeout
        self._lock = FileLock(str(self.path), timeout=0)

    def __enter__(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            holder = lock_holder(self.path)
            if not self.wait:
                raise LockTimeout(
                    f"another `kbgraph ingest` is running on knowledge base {self.name!r} ({holder}); "
                    "retry later or pass --wait"
                ) from None
            log.warning("waiting up to %.0f s for the lock held by %s (%s)", self.timeout, holder, self.path)
            try:
                self._lock.acquire(timeout=self.timeout)
            except Timeout:
                raise LockTimeout(
                    f"waited {self.timeout:.0f} s for the lock of knowledge base {self.name!r}, still held by "
                    f"{lock_holder(self.path)}; retry later or raise KBGRAPH_LOCK_TIMEOUT"
                ) from None
        claim(self.path)
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self.path.with_name(self.path.name + ".owner").unlink()
        self._lock.release()

    def check(self) -> None:
        """Nothing to check: the OS keeps a file lock as long as its process lives."""


#: The lock of an ingestion run, as ``open_run_lock`` makes it (each has ``check()``; ``ClaimLock`` also
#: ``take`` and ``release``).
IngestLock = RunLock | LeaseLock | ClaimLock
