"""The ingest lease: the lock of ``kbgraph ingest`` kept in the Neo4j database itself, so that runs on
different machines or containers (each with its own KB folder, e.g. one cron job per host) never write to one
database at the same time. The embedded FalkorDB store keeps
the file lock of ``kbgraph.ingest.lock``; ``kbgraph.ingest.lock.open_run_lock`` picks one by the store's
``GraphStore.lease_key``. The lock keeps each document's three layers (PIKE-RAG §5.1) written by one run only.

The lease is one node ``(:IngestLease {kb, owner, host, pid, machine, process_start, acquired_at, ttl_ms,
expires_at})``, unique on ``kb`` (``schema/ingest_lease_kb``):

* **taken** atomically by ``admin/lease_acquire`` when it is absent, expired or held by a process known to be
  gone (MERGE on the unique key, then the node's write lock before its owner and expiry are read);
* **renewed** by a daemon thread every ``lease_ttl / 3`` seconds while the run lives (``admin/lease_renew``, on a
  connection of its own: ``GraphStore.run_apart``); expiry is counted by the database's clock
  (``timestamp()``), so the hosts' clocks need not agree;
* **exclusive** of the runs that write at once by per-file claims (setting ``ingest_writers = "claims"``,
  ``kbgraph.ingest.claims``): once taken, the run waits until no live claim of another run is left
  (``wait_for_claims``); a claiming run refuses its next file while the lease is held;
* **released** at the end by its owner only (``admin/lease_release`` deletes it);
* **taken over** by another machine only after it expired. On the holder's own machine (same hostname, kernel
  boot and PID namespace) a holder whose process is gone (``kill -9``, crash; a reused pid is told apart by the
  process's start time) is taken over at once, as the OS releases a dead process's file lock.

A run that cannot renew its lease (taken over after a stall longer than the TTL, removed by ``kbgraph reset``,
or unreachable for two renewals in a row) stops at its next write boundary (``check``) with ``LeaseLost``
(exit 75) instead of writing on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kbgraph.errors import LockTimeout
from kbgraph.process import proc_stat
from kbgraph.text import one_line, utc_now
from kbgraph.store.base import GraphStore

log = logging.getLogger("kbgraph.ingest")

#: Seconds between two attempts to take a lease held by another run (``--wait``).
POLL_SECONDS = 1.0


class LeaseLost(LockTimeout):
    """The run's ingest lease was taken over or could not be renewed: the run stops before its next write
    (exit code 75, like a held lock: run again later)."""


def machine() -> str:
    """This machine as the lease records it: hostname, kernel boot id and PID namespace (Linux), so that two
    containers sharing a hostname but not a PID namespace differ; the hostname alone elsewhere. Only a holder
    whose ``machine`` equals ours can be checked for being alive by its pid."""
    parts = [socket.gethostname()]
    with contextlib.suppress(OSError):
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip())
        parts.append(os.readlink("/proc/self/ns/pid"))
    return "|".join(parts)


def process_start(pid: int) -> int | None:
    """The start time of process ``pid`` (clock ticks since boot, /proc/<pid>/stat field 22), or None when
    unknown (no /proc) or the process is gone or a zombie."""
    fields = proc_stat(pid)
    if fields is None or len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def holder_gone(row: dict[str, Any]) -> bool:
    """Is the lease holder of ``row`` (an ``admin/lease_acquire`` row) a process of this machine that no longer
    runs? False whenever that cannot be known (another machine, or no pid)."""
    pid = row.get("pid")
    if row.get("machine") != machine() or not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's
    recorded: object = row.get("process_start")
    if recorded is None:
        return False
    return process_start(pid) != recorded  # gone (zombie), or the pid now names another process


def describe(row: dict[str, Any]) -> str:
    """The holder as a message names it: "pid 123 on host since <UTC time>; its lease runs 41 s more unless
    renewed"."""
    remaining = max(0.0, (row.get("remaining_ms") or 0) / 1000)
    return (
        f"pid {row.get('pid')} on {row.get('host')} since {row.get('acquired_at')}; "
        f"its lease runs {remaining:.0f} s more unless renewed"
    )


class RenewedLock:
    """What the ingest lease (:class:`LeaseLock`) and the per-file claims (``kbgraph.ingest.claims.ClaimLock``)
    share: the store and knowledge base, the owner id, waiting while another run holds what is wanted, a renewal
    thread every ``ttl / 3`` seconds, and ``check()`` before each write. ``holds``: what the run holds, as
    messages name it before the knowledge base's name; ``pronoun``: it or they."""

    holds = "the ingest lease of knowledge base"
    pronoun = "it"
    thread_name = "kbgraph-ingest-lock"

    def __init__(self, store: GraphStore, name: str, *, wait: bool, timeout: float, ttl: float):
        self.store = store
        self.name = name
        key = store.lease_key()
        if key is None:
            raise ValueError(f"{type(store).__name__} has no lease key: its runs take the file lock (RunLock)")
        self.key: str = key
        self.wait = wait
        self.timeout = timeout
        self.ttl = ttl
        self.owner = uuid.uuid4().hex
        self._lost: str | None = None
        self._valid_until = 0.0  # time.monotonic() until which what the run holds is surely its own
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _wait_while(
        self,
        row: dict[str, Any],
        held: Callable[[dict[str, Any]], bool],
        again: Callable[[], dict[str, Any]],
        busy: str,
    ) -> dict[str, Any]:
        """``row`` once ``held(row)`` is False, asking ``again()`` every POLL_SECONDS up to ``timeout`` s. Raises
        LockTimeout at once without ``wait`` ("another `kbgraph ingest` is <busy> ..."), else after ``timeout``."""
        if not held(row):
            return row
        if not self.wait:
            raise LockTimeout(
                f"another `kbgraph ingest` is {busy} knowledge base {self.name!r} ({describe(row)}); retry later or "
                "pass --wait"
            )
        log.warning(
            "waiting up to %.0f s for the lock held by %s (ingest lease in %s)",
            self.timeout,
            describe(row),
            self.store.location,
        )
        deadline = time.monotonic() + self.timeout
        while held(row):
            left = deadline - time.monotonic()
            if left <= 0:
                raise LockTimeout(
                    f"waited {self.timeout:.0f} s for the lock of knowledge base {self.name!r}, still held by "
                    f"{describe(row)}; retry later or raise KBGRAPH_LOCK_TIMEOUT"
                )
            time.sleep(min(POLL_SECONDS, left))
            row = again()
        return row

    def _start_renewals(self) -> None:
        self._thread = threading.Thread(target=self._renew_loop, name=self.thread_name, daemon=True)
        self._thread.start()

    def _stop_renewals(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.ttl)

    def _renew_loop(self) -> None:
        raise NotImplementedError

    def check(self) -> None:
        """Raise LeaseLost unless what the run holds is surely still its own for a while: it was taken over, or
        its last renewal is so old that less than a third of ``ttl`` may be left (two renewals in a row failed).
        Called by the pipeline before each write."""
        reason = self._lost
        if reason is None and time.monotonic() > self._valid_until - self.ttl / 3:
            reason = f"{self.pronoun} could not be renewed for {self.ttl * 2 / 3:.0f} s and may have expired"
        if reason is not None:
            raise LeaseLost(
                f"lost {self.holds} {self.name!r} ({reason}); this run stopped before its next write: run "
                "`kbgraph ingest` again"
            )


class LeaseLock(RenewedLock):
    """``with LeaseLock(store, name, wait=..., timeout=..., ttl=...) as lock:`` holds the ingest lease of
    ``store`` (a store whose ``lease_key()`` is not None) and renews it until the block ends; ``lock.check()``
    before each write raises LeaseLost once the lease is lost.

    ``ttl``: seconds the lease lasts unless renewed (``lease_ttl``). Errors as ``kbgraph.ingest.lock.RunLock``:
    LockTimeout at once when another run holds the lease and ``wait`` is False ("another `kbgraph ingest` is
    running on knowledge base 'kb' (pid P on H since T; ...); retry later or pass --wait"); with ``wait``, a
    warning "waiting up to N s for the lock held by ..." and LockTimeout after ``timeout`` seconds."""

    thread_name = "kbgraph-ingest-lease"

    # --- taking and giving back -----------------------------------------------------------------
    def __enter__(self) -> LeaseLock:
        self._wait_while(self._try(), lambda row: not row["taken"], self._try, "running on")
        self._start_renewals()
        try:
            wait_for_claims(self.store, self.name, self.owner, self.timeout)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop_renewals()
        try:
            self.store.run_apart("admin/lease_release", {"kb": self.key, "owner": self.owner})
        except Exception as err:  # it expires by itself after ttl
            log.warning("could not release the ingest lease (%s); it expires in %.0f s", one_line(err), self.ttl)

    def _try(self) -> dict[str, Any]:
        """One attempt to take the lease (twice when its holder is a gone process of this machine)."""
        row = self._acquire(dead_owner="")
        if not row["taken"] and holder_gone(row):
            log.warning("the ingest lease holder (pid %s on this machine) is gone: taking its lease over", row["pid"])
            row = self._acquire(dead_owner=row["owner"])
        return row

    def _acquire(self, dead_owner: str) -> dict[str, Any]:
        sent = time.monotonic()
        pid = os.getpid()
        row = self.store.run_apart(
            "admin/lease_acquire",
            {
                "kb": self.key,
                "owner": self.owner,
                "dead_owner": dead_owner,
                "host": socket.gethostname(),
                "pid": pid,
                "machine": machine(),
                "process_start": process_start(pid),
                "acquired_at": utc_now(),
                "ttl_ms": int(self.ttl * 1000),
            },
        )[0]
        if row["taken"]:
            self._valid_until = sent + self.ttl
        return row

    # --- keeping it -------------------------------------------------------------------------------
    def _renew_loop(self) -> None:
        params = {"kb": self.key, "owner": self.owner, "ttl_ms": int(self.ttl * 1000)}
        while not self._stop.wait(self.ttl / 3):
            sent = time.monotonic()
            try:
                rows = self.store.run_apart("admin/lease_renew", params)
            except Exception as err:  # a passing network error: the next renewal may succeed
                log.warning("could not renew the ingest lease (%s); retrying in %.0f s", one_line(err), self.ttl / 3)
                continue
            if not rows:
                self._lost = "another run took it over after it expired, or `kbgraph reset` removed it"
                log.error("lost the ingest lease of knowledge base %r: %s", self.name, self._lost)
                return
            self._valid_until = sent + self.ttl


def wait_for_claims(store: GraphStore, name: str, owner: str, timeout: float) -> None:
    """Called by an exclusive run that has just taken the ingest lease: wait until no live run of another owner
    holds a claim on ``store`` (claims of gone processes of this machine do not count), up to ``timeout`` s
    (then LockTimeout). Claiming runs stop at their next file once the lease is taken, so this is at most the
    groups they were writing."""
    params = {"kb": store.lease_key(), "owner": owner, "limit": 100}
    deadline = time.monotonic() + timeout
    warned = False
    while True:
        rows = [r for r in store.run_apart("admin/claims_live", params) if not holder_gone(r)]
        if not rows:
            return
        if not warned:
            log.warning(
                "waiting up to %.0f s for other runs to finish the files they claimed (%s)", timeout, describe(rows[0])
            )
            warned = True
        left = deadline - time.monotonic()
        if left <= 0:
            raise LockTimeout(
                f"waited {timeout:.0f} s for other runs writing knowledge base {name!r} to finish their files "
                f"(still {describe(rows[0])}); retry later or raise KBGRAPH_LOCK_TIMEOUT"
            )
        time.sleep(min(POLL_SECONDS, left))
