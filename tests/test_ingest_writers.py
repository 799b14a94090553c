"""Many writers on one Neo4j knowledge base (setting ingest_writers = claims; kbgraph.ingest.claims; issue 37).

Every writer is a `kbgraph ingest` process with a KB folder (home) of its own, as cron jobs on several hosts have,
against the session's one Neo4j database, on one folder of small files that share entity names (so their units
of work MERGE the same Entity nodes at once). The union of the writers' reports covers every file exactly once as
ingested (the others: unchanged, or skipped "claimed by <host>"), and the graph equals one writer's ingest of the
folder: the same documents and chunks, no duplicate Entity, no document left 'writing', no claim left, no live
run marked interrupted. A writer killed (SIGKILL) mid-run leaves its claims; another writer skips them while they
live and takes them over once they expired (TTL 20 s), and converges.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbgraph.ingest.claims import ClaimLock
from kbgraph.ingest.sources import uri_to_path
from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings
from tests.ingest_env import ingest_env

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

PEOPLE = ["Ada Lovelace", "Charles Babbage", "Alan Turing", "Grace Hopper"]
PLACES = ["London", "Cambridge", "Manchester"]
CLAIMS = "MATCH (c:IngestClaim) RETURN c.document_key AS key, c.pid AS pid, c.expires_at - timestamp() AS remaining_ms"


@pytest.fixture
def kb(neo4j_settings: Settings) -> Iterator[KnowledgeBase]:
    kb = KnowledgeBase(settings=neo4j_settings)
    kb.reset()
    yield kb
    kb.reset()  # no claim, lease or run left behind for the other tests
    kb.close()


def _folder(tmp_path: Path, n: int = 12) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(n):
        a, b, place = PEOPLE[i % 4], PEOPLE[(i + 1) % 4], PLACES[i % 3]
        (folder / f"note{i:02d}.txt").write_text(
            f"Note {i}. {a} met {b} in {place} in {1830 + i}. {a} wrote to {b} about the Analytical Engine.\n\n"
            f"Later {b} visited {place} again and {a} answered with letter number {i}.",
            encoding="utf-8",
        )
    return folder


def _env(settings: Settings, tmp_path: Path, host: str, **extra: str) -> dict[str, str]:
    """tests.ingest_env's environment, writing with claims in groups of 2 files."""
    return ingest_env(
        settings, tmp_path, host, **{"KBGRAPH_INGEST_GROUP_SIZE": "2", "KBGRAPH_INGEST_WRITERS": "claims", **extra}
    )


def _start(env: dict[str, str], folder: Path, out: Path) -> subprocess.Popen[bytes]:
    with open(out, "w", encoding="utf-8") as fh, open(out.with_suffix(".log"), "w", encoding="utf-8") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "kbgraph.cli", "ingest", "--json", str(folder)], env=env, stdout=fh, stderr=err
        )


def _report(out: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return report


def _graph(kb: KnowledgeBase) -> dict[str, Any]:
    """What must equal between the writers' graph and one writer's: documents with their chunk counts, entity ids,
    node and relationship counts (runs aside)."""
    docs = kb.store._execute(
        "MATCH (d:Document) OPTIONAL MATCH (d)-[:HAS_CHUNK]->(c:Chunk) "
        "RETURN d.id AS id, d.status AS status, count(c) AS chunks ORDER BY id",
        {},
    )
    entities = [r["id"] for r in kb.store._execute("MATCH (e:Entity) RETURN e.id AS id ORDER BY id", {})]
    stats = kb.stats()
    return {
        "documents": docs,
        "entities": entities,
        "relationships": stats.relationships,
        "nodes": {k: v for k, v in stats.nodes.items() if k != "IngestionRun"},
    }


def _single_writer(kb: KnowledgeBase, folder: Path) -> dict[str, Any]:
    kb.reset()
    kb.ingest([folder], progress=False)
    return _graph(kb)


def test_writers_share_the_files_and_build_one_writers_graph(
    kb: KnowledgeBase, neo4j_settings: Settings, tmp_path: Path
) -> None:
    folder = _folder(tmp_path)
    files = sorted(str(p) for p in folder.iterdir())
    t0 = time.monotonic()
    procs = [
        (_start(_env(neo4j_settings, tmp_path, f"host-{i}"), folder, tmp_path / f"w{i}.json"), tmp_path / f"w{i}.json")
        for i in range(3)
    ]
    for proc, out in procs:
        assert proc.wait(timeout=600) == 0, out.with_suffix(".log").read_text(encoding="utf-8")
    wall = time.monotonic() - t0
    reports = [_report(out) for _, out in procs]

    ingested: dict[str, int] = dict.fromkeys(files, 0)
    for r in reports:
        assert sorted(f["path"] for f in r["files"]) == files  # each writer accounts for every file
        for f in r["files"]:
            if f["outcome"] == "ingested":
                ingested[f["path"]] += 1
            else:
                assert f["outcome"] == "unchanged" or (
                    f["outcome"] == "skipped" and f["reason"].startswith("claimed by ")
                ), f
    assert ingested == dict.fromkeys(files, 1)  # the union: every file exactly once
    assert sum(r["added"] for r in reports) == len(files)
    assert sum(1 for r in reports if r["added"]) >= 2, [r["added"] for r in reports]  # they did write at once
    assert all(r["status"] == "completed" for r in reports)

    got = _graph(kb)
    dup = kb.store._execute("MATCH (e:Entity) WITH e.id AS id, count(*) AS n WHERE n > 1 RETURN id", {})
    assert dup == []
    assert all(d["status"] == "complete" for d in got["documents"])
    assert kb.store._execute(CLAIMS, {}) == []  # every claim given back
    runs = kb.store._execute(
        "MATCH (r:IngestionRun) RETURN r.status AS status, r.interrupted_noticed_by AS noticed_by", {}
    )
    assert [(r["status"], r["noticed_by"]) for r in runs] == [("completed", None)] * 3  # no live run interrupted

    t0 = time.monotonic()
    expected = _single_writer(kb, folder)
    print(
        f"3 writers: {wall:.1f} s wall (processes); one writer in-process: {time.monotonic() - t0:.1f} s; "
        f"added per writer {[r['added'] for r in reports]}"
    )
    assert got == expected


def test_a_killed_writers_claims_expire_and_another_writer_takes_them_over(
    kb: KnowledgeBase, neo4j_settings: Settings, tmp_path: Path
) -> None:
    folder = _folder(tmp_path)
    files = sorted(str(p) for p in folder.iterdir())
    out_a = tmp_path / "a.json"
    a = _start(
        _env(neo4j_settings, tmp_path, "host-a", KBGRAPH_LEASE_TTL="20", KBGRAPH_INGEST_GROUP_SIZE="1"), folder, out_a
    )
    try:
        deadline = time.monotonic() + 300
        while True:
            assert a.poll() is None, "the writer finished before it could be killed"
            assert time.monotonic() < deadline
            if kb.stats().nodes.get("Document", 0) >= 2 and kb.store._execute(CLAIMS, {}):
                # frozen first, so that its claims stay as they are between the change below and the kill (a writer
                # still running there could release a claim and take the next one, not marked 'another machine's)
                os.kill(a.pid, signal.SIGSTOP)
                if kb.store._execute(CLAIMS, {}):
                    break
                os.kill(a.pid, signal.SIGCONT)
            time.sleep(0.05)
        # its claims look held by a process on another machine, whose death nobody here can see (test_lease.py)
        kb.store._execute("MATCH (c:IngestClaim) SET c.machine = 'another machine'", {})
        os.kill(a.pid, signal.SIGKILL)
        a.wait()
    finally:
        if a.poll() is None:
            a.kill()
            a.wait()
    left = kb.store._execute(CLAIMS, {})
    assert left and all(r["remaining_ms"] > 5000 for r in left)
    claimed = {uri_to_path(r["key"]) for r in left}

    env_b = _env(neo4j_settings, tmp_path, "host-b")
    first = subprocess.run(
        [sys.executable, "-m", "kbgraph.cli", "ingest", "--json", str(folder)],
        env=env_b,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert first.returncode == 0, first.stderr
    skipped = {f["path"]: f["reason"] for f in json.loads(first.stdout)["files"] if f["outcome"] == "skipped"}
    assert set(skipped) == claimed  # the dead writer's files, while its claims live
    assert all(reason == f"claimed by {socket.gethostname()} (pid {a.pid})" for reason in skipped.values())
    deadline = time.monotonic() + 60
    while any(r["remaining_ms"] > 0 for r in kb.store._execute(CLAIMS, {})):  # they expire (database clock)
        assert time.monotonic() < deadline
        time.sleep(0.5)

    second = subprocess.run(
        [sys.executable, "-m", "kbgraph.cli", "ingest", "--json", str(folder)],
        env=env_b,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    # the dead writer's files are taken over: each is ingested now, or unchanged when the writer had written it
    # between its last write and the kill (its claim not yet released); none is skipped any more
    outcomes = {f["path"]: f["outcome"] for f in report["files"]}
    assert {p for p, o in outcomes.items() if o == "ingested"} <= claimed
    assert all(o in ("ingested", "unchanged") for o in outcomes.values()), outcomes
    assert kb.store._execute(CLAIMS, {}) == []
    got = _graph(kb)
    assert all(d["status"] == "complete" for d in got["documents"]) and len(got["documents"]) == len(files)
    runs = sorted(r["status"] for r in kb.store._execute("MATCH (r:IngestionRun) RETURN r.status AS status", {}))
    assert runs == ["completed", "completed", "interrupted"]  # the killed one, noticed once its expiry passed
    assert got == _single_writer(kb, folder)


def test_a_run_is_known_alive_from_its_first_statement(
    kb: KnowledgeBase, neo4j_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer that starts between this run's ingest/start_run and its first renewal (its
    ingest/interrupt_stale_runs falls in that window, as it did once under load in CI) must not take the run for
    dead: with claims, start_run itself sets expires_at."""
    from kbgraph.ingest.claims import ClaimLock

    folder = _folder(tmp_path, n=2)
    real_attach = ClaimLock.attach_run

    def another_writer_starts_first(self: ClaimLock, run_id: str) -> None:
        kb.store.run("ingest/interrupt_stale_runs", {"id": "run:another-writer", "noticed_at": "now"})
        real_attach(self, run_id)

    monkeypatch.setattr(ClaimLock, "attach_run", another_writer_starts_first)
    with KnowledgeBase(settings=neo4j_settings.model_copy(update={"ingest_writers": "claims"})) as writer:
        report = writer.ingest([folder], progress=False)
    assert report.status == "completed" and report.added == 2
    runs = kb.store._execute(
        "MATCH (r:IngestionRun) RETURN r.status AS status, r.interrupted_noticed_by AS noticed_by", {}
    )
    assert [(r["status"], r["noticed_by"]) for r in runs] == [("completed", None)]
