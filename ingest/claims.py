"""Many writers on one Neo4j knowledge base (setting ``ingest_writers = "claims"``): ``kbgraph ingest`` runs on
several machines (each with its own KB folder) write at once and share the files of one source by per-file
claims in the database, instead of taking turns through the ingest lease (``kbgraph.ingest.lease``).

A claim is one node ``(:IngestClaim {kb, document_key, owner, run_id, host, pid, machine, process_start,
claimed_at, expires_at})``, unique on ``(kb, document_key)`` (``schema/ingest_claim_key``); ``document_key`` is the
source file's URI, from which the ids of its documents derive (``stable_id("doc", uri)``), so every machine must
see the source at the same path (as for the lease). A claim is

* **taken** before the file is hashed or parsed (``admin/claim_take``: MERGE on the unique key, then the node's
  write lock before its owner and expiry are read, as ``admin/lease_acquire``), in a unit of work that first holds
  the ingest lease's node lock (``admin/claim_lease``): a file claimed while an exclusive run holds the lease is
  refused (``LeaseLost``, exit 75), and an exclusive run that has just taken the lease sees every claim taken
  before it and waits for them (``LeaseLock``);
* **renewed** with the run's other claims every ``lease_ttl / 3`` seconds by a daemon thread (``admin/claim_renew``
  on a connection of its own, ``GraphStore.run_apart``; expiry by the database's clock), which also keeps the
  run's ``IngestionRun`` known alive (``ingest/renew_run``: ``interrupt_stale_runs`` leaves a run alone until its
  ``expires_at`` has passed);
* **released** once the file's documents are written (``admin/claim_release``), and every claim left at the end
  of the run (a failed file, a passage corpus);
* **taken over** by another run once expired, or at once on the holder's own machine when its process is gone
  (``kbgraph.ingest.lease.holder_gone``).

A file claimed by a live other run is reported skipped ("claimed by <host> (pid N)"); that run writes it. A file
found unchanged after its claim is taken (another run wrote it meanwhile) is unchanged, not parsed. The rest is
the one-writer pipeline: one unit of work per group (only complete documents are served), the report, the
``IngestionRun`` per run. ``--prune`` takes the lease instead (``kbgraph.ingest.lock.open_run_lock``): deleting
the documents whose source vanished stays a run alone on the knowledge base.

A run whose claims could not be renewed (taken over after a stall longer than the TTL, removed by ``kbgraph
reset``, or unreachable for two renewals in a row) stops before its next write (``check``: ``LeaseLost``).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Any

from kbgraph.ingest.lease import LeaseLost, RenewedLock, describe, holder_gone, machine, process_start
from kbgraph.text import one_line, utc_now
from kbgraph.store.base import GraphStore

log = logging.getLogger("kbgraph.ingest")


def lease_held(row: dict[str, Any], owner: str = "") -> bool:
    """Does the ingest lease of ``row`` (an ``admin/claim_lease`` row) belong to a live run other than ``owner``?"""
    if row.get("owner") in (None, owner) or (row.get("remaining_ms") or 0) <= 0:
        return False
    return not holder_gone(row)


class ClaimLock(RenewedLock):
    """``with ClaimLock(store, name, wait=..., timeout=..., ttl=...) as claims:`` the run's side of the claims of
    ``store`` (a store with a ``lease_key()``): ``take(key)`` before a file is read, ``release(keys)`` once it is
    written, ``check()`` before each write (as ``LeaseLock.check``), ``attach_run(run_id)`` once the run is
    recorded. Entering waits as ``LeaseLock`` does while an exclusive run holds the ingest lease (LockTimeout at
    once without ``wait``); leaving releases every claim still held."""

    holds = "the ingest claims of this run on knowledge base"
    pronoun = "they"
    thread_name = "kbgraph-ingest-claims"

    def __init__(self, store: GraphStore, name: str, *, wait: bool, timeout: float, ttl: float):
        super().__init__(store, name, wait=wait, timeout=timeout, ttl=ttl)
        self.run_id: str | None = None
        self._held: set[str] = set()
        self._mutex = threading.Lock()  # the held set and its statements: the main thread and the renewals

    # --- the run ------------------------------------------------------------------------------------
    def __enter__(self) -> ClaimLock:
        def lease() -> dict[str, Any]:
            return self.store.run_apart("admin/claim_lease", {"kb": self.key})[0]

        self._wait_while(lease(), lease_held, lease, "running alone on")
        self._valid_until = time.monotonic() + self.ttl
        self._start_renewals()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop_renewals()
        with self._mutex:
            keys = sorted(self._held)
            self._held.clear()
        try:
            if keys:
                self.store.run_apart("admin/claim_release", {"kb": self.key, "owner": self.owner, "keys": keys})
            self.store.run_apart("admin/claim_lease_drop", {"kb": self.key})  # the free lease node claim_lease made
        except Exception as err:  # they expire by themselves after ttl
            log.warning(
                "could not release %d ingest claims (%s); they expire in %.0f s", len(keys), one_line(err), self.ttl
            )

    def attach_run(self, run_id: str) -> None:
        """The run is recorded as ``(:IngestionRun {id: run_id})``, its ``expires_at`` set by ``ingest/start_run``:
        the renewals keep it known alive from now on."""
        self.run_id = run_id

    # --- claims -------------------------------------------------------------------------------------
    def take(self, key: str) -> str | None:
        """Claim the source file ``key`` (its URI) for this run: None when taken (or already ours), else who holds
        it ("<host> (pid N)"), a live other run. Raises LeaseLost when an exclusive run holds the ingest lease."""
        with self._mutex:
            row = self._take(key, dead_owner="")
            if not row["taken"] and holder_gone(row):
                log.warning(
                    "the claim of %s is held by pid %s of this machine, which is gone: taking it over", key, row["pid"]
                )
                row = self._take(key, dead_owner=row["owner"])
            if row["taken"]:
                self._held.add(key)
                return None
        return f"{row.get('host') or 'another machine'} (pid {row.get('pid')})"

    def _take(self, key: str, dead_owner: str) -> dict[str, Any]:
        pid = os.getpid()
        with self.store.transaction() as tx:
            lease = tx.run("admin/claim_lease", {"kb": self.key})[0]
            if lease_held(lease):
                raise LeaseLost(
                    f"an exclusive `kbgraph ingest` (--prune, or ingest_writers=lease) took knowledge base "
                    f"{self.name!r} ({describe(lease)}); this run stopped before its next file: run it again later"
                )
            return tx.run(
                "admin/claim_take",
                {
                    "kb": self.key,
                    "key": key,
                    "owner": self.owner,
                    "dead_owner": dead_owner,
                    "run_id": self.run_id,
                    "host": socket.gethostname(),
                    "pid": pid,
                    "machine": machine(),
                    "process_start": process_start(pid),
                    "claimed_at": utc_now(),
                    "ttl_ms": int(self.ttl * 1000),
                },
            )[0]

    def release(self, keys: list[str]) -> None:
        """Give back the claims of ``keys`` (written, or found unchanged) that this run holds."""
        with self._mutex:
            mine = sorted(set(keys) & self._held)
            if not mine:
                return
            self._held.difference_update(mine)
            try:
                self.store.run("admin/claim_release", {"kb": self.key, "owner": self.owner, "keys": mine})
            except Exception as err:  # they expire by themselves after ttl
                log.warning("could not release %d ingest claims (%s)", len(mine), one_line(err))

    # --- keeping them -------------------------------------------------------------------------------
    def _renew_loop(self) -> None:
        params = {"kb": self.key, "owner": self.owner, "ttl_ms": int(self.ttl * 1000)}
        while not self._stop.wait(self.ttl / 3):
            sent = time.monotonic()
            try:
                with self._mutex:
                    rows = self.store.run_apart("admin/claim_renew", params)
                    missing = self._held - {r["key"] for r in rows}
                if self.run_id is not None:
                    self.store.run_apart("ingest/renew_run", {"id": self.run_id, "ttl_ms": params["ttl_ms"]})
            except Exception as err:  # a passing network error: the next renewal may succeed
                log.warning("could not renew the ingest claims (%s); retrying in %.0f s", one_line(err), self.ttl / 3)
                continue
            if missing:
                self._lost = (
                    f"the claims of {len(missing)} files were taken over after they expired, or "
                    "`kbgraph reset` removed them"
                )
                log.error("lost ingest claims on knowledge base %r: %s", self.name, self._lost)
                return
            self._valid_until = sent + self.ttl
