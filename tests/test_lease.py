"""The ingest lease on the real Neo4j (kbgraph.ingest.lease; issue 15, "Scheduled ingestion across machines").

Every run here is a `kbgraph ingest` process with a KB folder (home) of its own, as two hosts' cron jobs have,
against the session's one Neo4j database: the file lock of a KB folder cannot keep them apart, the lease in the
database must. A second run exits 75 naming the holder, or waits with --wait and then succeeds; a kill -9'd
holder's lease expires and the next run takes it over and converges; a run that loses its lease stops before
its next write; two takers of an expired lease never both get it.

The processes all run on this machine, where a dead holder's lease is taken over at once (its pid is gone);
to test expiry, the test rewrites the holder's ``machine`` in its lease, so that it looks like a holder on
another machine, whose death nobody here can see.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from kbgraph.errors import LockTimeout
from kbgraph.ingest.lease import LeaseLock
from kbgraph.ingest.lock import open_run_lock
from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings
from kbgraph.store.base import Row
from tests.ingest_env import ingest_env

CORPUS = "multihop/musique/hipporag_train100.corpus.jsonl"
LEASE = (
    "MATCH (l:IngestLease) RETURN l.owner AS owner, l.pid AS pid, l.host AS host, l.machine AS machine, "
    "l.expires_at - timestamp() AS remaining_ms"
)


@pytest.fixture
def kb(neo4j_settings: Settings) -> Iterator[KnowledgeBase]:
    kb = KnowledgeBase(settings=neo4j_settings)
    kb.reset()
    yield kb
    kb.reset()  # no lease left behind for the other tests
    kb.close()


def _passages(examples_dir: Path, tmp_path: Path, n: int) -> Path:
    lines = (examples_dir / CORPUS).read_text(encoding="utf-8").splitlines()[:n]
    out = tmp_path / "corpus.jsonl"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


_env = ingest_env
T = TypeVar("T")


def _ingest(env: dict[str, str], *args: str, log: Path | None = None) -> subprocess.Popen[bytes]:
    out = open(log, "w", encoding="utf-8") if log else subprocess.DEVNULL  # noqa: SIM115 (closed by the process's end)
    return subprocess.Popen(
        [sys.executable, "-m", "kbgraph.cli", "ingest", *args], env=env, stdout=subprocess.DEVNULL, stderr=out
    )


def _lease(kb: KnowledgeBase) -> Row | None:
    rows = kb.store._execute(LEASE, {})
    return rows[0] if rows else None


def _until(what: Callable[[], T], timeout: float = 300.0, proc: subprocess.Popen[bytes] | None = None) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        if proc is not None:
            assert proc.poll() is None, f"the process exited ({proc.returncode}) too early"
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout:.0f} s")


def _documents(kb: KnowledgeBase) -> int:
    return kb.stats().nodes.get("Document", 0)


def _finish(*procs: subprocess.Popen[bytes]) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_second_run_on_another_home_exits_75_naming_the_holder_or_waits(
    kb: KnowledgeBase, neo4j_settings: Settings, examples_dir: Path, tmp_path: Path
) -> None:
    corpus = _passages(examples_dir, tmp_path, 120)
    (tmp_path / "b.txt").write_text("Leases keep runs of two hosts apart.", encoding="utf-8")
    holder = _ingest(_env(neo4j_settings, tmp_path, "host-a"), str(corpus))
    waiter = None
    try:
        _until(lambda: (_lease(kb) or {}).get("pid") == holder.pid, proc=holder)
        os.kill(holder.pid, signal.SIGSTOP)  # the holder is in the middle of its run (its TTL is 60 s)
        env_b = _env(neo4j_settings, tmp_path, "host-b")
        second = subprocess.run(
            [sys.executable, "-m", "kbgraph.cli", "ingest", str(tmp_path / "b.txt")],
            env=env_b,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert second.returncode == 75, second.stderr
        assert f"pid {holder.pid} on {socket.gethostname()} since " in second.stderr
        assert "--wait" in second.stderr
        assert _documents(kb) < 120

        log = tmp_path / "waiter.log"
        waiter = _ingest(env_b, "--wait", str(tmp_path / "b.txt"), log=log)
        _until(lambda: "waiting up to" in log.read_text(encoding="utf-8"), timeout=180, proc=waiter)
        assert f"pid {holder.pid}" in log.read_text(encoding="utf-8")
        os.kill(holder.pid, signal.SIGCONT)
        assert holder.wait(timeout=600) == 0
        assert waiter.wait(timeout=300) == 0, log.read_text(encoding="utf-8")
    finally:
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGCONT)
        _finish(holder, *([waiter] if waiter else []))
    assert _documents(kb) == 121
    assert _lease(kb) is None  # released by its owner
    runs = kb.store._execute(
        "MATCH (r:IngestionRun) RETURN r.status AS status, r.started_at AS started_at, "
        "r.finished_at AS finished_at ORDER BY r.started_at",
        {},
    )
    assert [r["status"] for r in runs] == ["completed", "completed"]
    assert runs[1]["started_at"] >= runs[0]["finished_at"]  # the waiter ran after the holder, not beside it
    assert all(r["status"] == "complete" for r in kb.store.run("ingest/list_documents"))


def test_killed_holders_lease_expires_and_the_next_run_converges(
    kb: KnowledgeBase, neo4j_settings: Settings, examples_dir: Path, tmp_path: Path
) -> None:
    corpus = _passages(examples_dir, tmp_path, 120)
    holder = _ingest(_env(neo4j_settings, tmp_path, "host-a", KBGRAPH_LEASE_TTL="8"), str(corpus))
    try:
        _until(lambda: _documents(kb) >= 20, proc=holder)
        kb.store._execute("MATCH (l:IngestLease) SET l.machine = 'another machine'", {})  # see the module doc
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    finally:
        _finish(holder)
    partial = _documents(kb)
    assert 0 < partial < 120
    lease = _lease(kb)
    assert lease["pid"] == holder.pid and lease["remaining_ms"] > 0  # type: ignore[index]
    with pytest.raises(LockTimeout, match=f"pid {holder.pid} on "):  # not expired: still the dead holder's
        kb.ingest([corpus], progress=False)

    log = tmp_path / "next.log"
    nxt = _ingest(_env(neo4j_settings, tmp_path, "host-b"), "--wait", str(corpus), log=log)
    try:
        assert nxt.wait(timeout=600) == 0, log.read_text(encoding="utf-8")
    finally:
        _finish(nxt)
    assert _lease(kb) is None
    got = kb.stats()
    assert kb.store.orphans() == []
    assert all(r["status"] == "complete" for r in kb.store.run("ingest/list_documents"))
    statuses = [r["status"] for r in kb.store._execute("MATCH (r:IngestionRun) RETURN r.status AS status", {})]
    assert sorted(statuses) == ["completed", "interrupted"]
    kb.reset()  # the reference: one clean run
    kb.ingest([corpus], progress=False)
    expected = kb.stats()

    def drop(nodes: dict[str, int]) -> dict[str, int]:
        return {k: v for k, v in nodes.items() if k != "IngestionRun"}

    assert drop(got.nodes) == drop(expected.nodes)
    assert got.relationships == expected.relationships


def test_a_run_that_lost_its_lease_stops_before_its_next_write(
    kb: KnowledgeBase, neo4j_settings: Settings, examples_dir: Path, tmp_path: Path
) -> None:
    corpus = _passages(examples_dir, tmp_path, 120)
    log = tmp_path / "holder.log"
    holder = _ingest(_env(neo4j_settings, tmp_path, "host-a", KBGRAPH_LEASE_TTL="3"), str(corpus), log=log)
    try:
        _until(lambda: _documents(kb) >= 16, proc=holder)
        os.kill(holder.pid, signal.SIGSTOP)  # a stall longer than the TTL; meanwhile another run takes the lease
        written = _documents(kb)
        # in a thread: should the holder have stopped inside a renewal, the steal waits for the node's lock
        steal = threading.Thread(
            target=kb.store._execute,
            args=("MATCH (l:IngestLease) SET l.owner = 'thief', l.expires_at = timestamp() + 600000", {}),
        )
        steal.start()
        time.sleep(3.5)
        os.kill(holder.pid, signal.SIGCONT)
        steal.join(timeout=60)
        assert holder.wait(timeout=300) == 75, log.read_text(encoding="utf-8")
    finally:
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGCONT)
        _finish(holder)
    assert "lost the ingest lease" in log.read_text(encoding="utf-8")
    assert _documents(kb) <= written + 16  # at most the group whose write was under way
    assert _documents(kb) < 120
    assert all(r["status"] == "complete" for r in kb.store.run("ingest/list_documents"))
    assert _lease(kb)["owner"] == "thief"  # type: ignore[index]  # a lost lease is not released by its former owner


def test_two_takers_of_an_expired_lease_never_both_get_it(kb: KnowledgeBase, neo4j_settings: Settings) -> None:
    kb.store._execute(
        "CREATE (:IngestLease {kb: $kb, owner: 'dead', pid: -1, host: 'elsewhere', "
        "machine: 'another machine', expires_at: timestamp() - 1000})",
        {"kb": kb.store.lease_key()},
    )
    locks = [open_run_lock(kb.store, neo4j_settings, wait=False) for _ in range(8)]
    assert all(isinstance(lock, LeaseLock) for lock in locks)
    start = threading.Barrier(len(locks))
    won: list[LeaseLock] = []
    refused: list[str] = []

    def take(lock: LeaseLock) -> None:
        start.wait()
        try:
            won.append(lock.__enter__())
        except LockTimeout as exc:
            refused.append(str(exc))

    threads = [threading.Thread(target=take, args=(lock,)) for lock in locks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    try:
        assert len(won) == 1 and len(refused) == len(locks) - 1
        assert _lease(kb)["owner"] == won[0].owner  # type: ignore[index]
        assert kb.store._execute("MATCH (l:IngestLease) RETURN count(l) AS n", {})[0]["n"] == 1
        won[0].check()  # held and renewed
    finally:
        for lock in won:
            lock.__exit__(None, None, None)
    assert _lease(kb) is None
