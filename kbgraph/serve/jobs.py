"""Ingestion jobs of ``POST /v1/kb/{name}/ingest`` and the MCP tool ``ingest``.

A job is one :meth:`kbgraph.kb.KnowledgeBase.ingest` call (PIKE-RAG §5.1-§5.2: parse, chunk, distill, embed,
write) run on a background thread with a store connection of its own, so questions are answered while it
writes (they see only complete documents). Jobs of one knowledge base run one after another, in the order
submitted (``queued`` until the previous one ends); across processes the library's ingestion lock applies as
for the CLI: with ``wait`` false a job finds another process's run and fails with the LockTimeout message
(``exit_code`` 75), with ``wait`` true it waits up to ``lock_timeout`` s.

Each file of an upload is followed (``Job.files``, :class:`FileProgress`): ``queued`` while the job waits,
``running`` once it runs (the file is read, chunked, distilled and embedded with its group), ``writing`` while
its document is being written, ``done`` once its document is complete in this job, and at the end the report's
outcome for each file (ingested, updated, unchanged; ``failed`` or ``skipped`` with the reason). The live states
come from the store (the file's Document, whose id derives from its path: browse/file_states), read by
:meth:`JobManager.get` at most every :data:`OBSERVE_SECONDS` while the job runs: the library reports no stage per
file, so a file's reading, distilling and embedding are one state, ``running``. A job given server paths lists its
files from the report once it ends (its folders are walked by the run).

Jobs live in memory (the newest :data:`KEEP` are kept); a job's report is also the ``(:IngestionRun)`` node the
library writes. A job is seen by the key that submitted it only (and by an unrestricted caller:
kbgraph.serve.access.unrestricted); to any other key it does not exist.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from kbgraph.errors import KBGraphError
from kbgraph.ingest.report import IngestReport
from kbgraph.models import stable_id
from kbgraph.serve.access import KeyScope, check_ingest_paths, resolved_roots, unrestricted
from kbgraph.serve.kbs import KBPool, check_name
from kbgraph.serve.uploads import discard_refused
from kbgraph.text import one_line, utc_now

if TYPE_CHECKING:
    from kbgraph.serve.metrics import Metrics

#: Finished jobs kept for GET /v1/jobs/{id}.
KEEP = 1000
#: The store is read for a running job's file states at most this often (seconds), however often it is asked.
OBSERVE_SECONDS = 0.5
FileState = Literal["queued", "running", "writing", "done", "failed", "skipped"]


class FileProgress(BaseModel):
    """One file of an ingestion job: its ``name``, where it is (``path``), its ``state`` (module doc: queued ->
    running -> writing -> done, or failed / skipped), and once the job ends the report's ``outcome`` (ingested,
    updated, unchanged, failed, skipped), its ``chunks`` written and the ``reason`` of a failure or skip."""

    name: str
    path: str
    state: FileState = "queued"
    outcome: str | None = None
    chunks: int | None = None
    reason: str | None = None

    @classmethod
    def of(cls, path: str | Path) -> FileProgress:
        return cls(name=Path(path).name, path=str(path))


class Job(BaseModel):
    """An ingestion job. ``status``: queued -> running -> done (``report`` holds the IngestReport; files that
    failed are in it, ``report.failed`` > 0) or failed (``error``: one line; ``exit_code``: the CLI's, e.g. 75
    when another run held the lock). ``paths``: as given, or for uploaded files where they were kept
    (``<home>/<kb>/uploads/<name>``, kbgraph.serve.uploads). ``files``: each file's progress (:class:`FileProgress`;
    an upload's from the start, a job of server paths once it ends). Times are ISO 8601 UTC."""

    id: str
    kb: str
    paths: list[str]
    prune: bool = False
    wait: bool = False
    status: Literal["queued", "running", "done", "failed"] = "queued"
    submitted_at: str = Field(default_factory=utc_now)
    started_at: str | None = None
    finished_at: str | None = None
    report: IngestReport | None = None
    error: str | None = None
    exit_code: int | None = None
    files: list[FileProgress] = Field(default_factory=list)


class JobManager:
    """Runs ingestion jobs over ``pool`` (daemon threads; a job cut short by the process ending is marked
    'interrupted' by the next run, as after a killed CLI run)."""

    def __init__(self, pool: KBPool, metrics: Metrics | None = None):
        self.pool = pool
        self.metrics = metrics  # counts what finished jobs wrote (kbgraph.serve.metrics)
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._owners: dict[str, str | None] = {}  # job id -> the identity of the key that submitted it
        self._kb_locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._observed: dict[str, float] = {}  # job id -> when its files' states were last read from the store

    def submit(
        self,
        kb: str,
        paths: Sequence[str | Path],
        *,
        prune: bool = False,
        wait: bool = False,
        uploaded: bool = False,
        owner: KeyScope | None = None,
    ) -> Job:
        """Queue ``kb.ingest(paths, prune=prune, wait=wait)``; returns the queued Job at once. Paths a client
        named (``uploaded`` False) must lie inside the setting ``serve_ingest_roots`` once resolved, and the job
        walks their folders fenced by those roots (kbgraph.serve.access); ``uploaded``: the server's own upload
        files (those refused for their type are removed at the end: kbgraph.serve.uploads.discard_refused); ``owner``: the key of the request (None without keys), the one restricted key that sees the job.
        Raises InvalidName for a bad knowledge-base name, Forbidden (HTTP 403) for a path outside the
        roots or for any path when there are none; nothing is queued or read then."""
        check_name(kb)
        within = None
        if not uploaded:
            roots = self.pool.settings.serve.serve_ingest_roots
            paths = check_ingest_paths(paths, roots)
            within = resolved_roots(roots)
        self.pool.settings_for(kb)  # a knowledge base the store cannot host fails now, not in the job
        job = Job(
            id=uuid.uuid4().hex,
            kb=kb,
            paths=[str(p) for p in paths],
            prune=prune,
            wait=wait,
            files=[FileProgress.of(p) for p in paths] if uploaded else [],
        )
        with self._guard:
            self._jobs[job.id] = job
            self._owners[job.id] = owner.identity if owner is not None else None
            while len(self._jobs) > KEEP:
                self._owners.pop(self._jobs.popitem(last=False)[0], None)
            lock = self._kb_locks.setdefault(kb, threading.Lock())
        threading.Thread(
            target=self._run, args=(job, lock, within, uploaded), name=f"kbgraph-ingest-{job.id[:8]}", daemon=True
        ).start()
        return job

    def get(self, job_id: str, key: KeyScope | None = None) -> Job | None:
        """The job ``job_id`` (a copy) as ``key`` may see it (None: no keys configured), or None when it is
        unknown, forgotten, or submitted by another key while ``key`` is restricted. A running job's file states
        are read from the store first (:meth:`observe`)."""
        with self._guard:
            job = self._jobs.get(job_id)
            if job is None or not (unrestricted(key) or (key is not None and self._owners.get(job_id) == key.identity)):
                return None
        self.observe(job)
        with self._guard:
            return job.model_copy(deep=True)

    def observe(self, job: Job) -> None:
        """Bring the states of a running job's files up to date from the store (at most every
        :data:`OBSERVE_SECONDS`): a file whose Document (``stable_id('doc', its URI)``) is 'writing' is writing,
        one whose Document is 'complete' and ingested since the job started is done. A store that cannot be read
        now leaves the states as they are (the job's end gives every file its outcome)."""
        now = time.monotonic()
        with self._guard:
            open_files = {
                stable_id("doc", Path(f.path).resolve().as_uri()): f
                for f in job.files
                if f.state in ("queued", "running", "writing")
            }
            if job.status != "running" or not open_files or now - self._observed.get(job.id, 0.0) < OBSERVE_SECONDS:
                return
            self._observed[job.id] = now
            started = job.started_at or ""
        try:
            with self.pool.use(job.kb) as kb:
                rows = kb.store.run("browse/file_states", {"ids": list(open_files)})
        except Exception:  # noqa: BLE001 - progress is a display: the job's own outcome is what counts
            return
        with self._guard:
            if job.status != "running":
                return  # ended meanwhile: its files hold the report's outcomes
            for row in rows:
                file = open_files[row["id"]]
                if row["status"] == "writing":
                    file.state = "writing"
                elif row["status"] == "complete" and str(row["ingested_at"] or "") >= started:
                    file.state = "done"

    def _run(self, job: Job, lock: threading.Lock, within: list[Path] | None = None, uploaded: bool = False) -> None:
        with lock:
            with self._guard:
                job.status, job.started_at = "running", utc_now()
                for file in job.files:
                    file.state = "running"
            try:
                with self.pool.writing(job.kb) as kb:
                    report = kb.ingest(job.paths, prune=job.prune, wait=job.wait, progress=False, within=within)
                if uploaded:
                    discard_refused(job.paths, report)
                self._count(report, "done")  # before the status: a client that sees "done" sees it counted
                with self._guard:
                    job.report, job.exit_code, job.files = report, report.exit_code, outcomes(job, report)
                    job.status = "done"
            except KBGraphError as exc:
                self._count(None, "failed")
                self._failed(job, one_line(exc), exc.exit_code)
            except Exception as exc:  # noqa: BLE001 - a job records its failure instead of killing the thread
                self._count(None, "failed")
                self._failed(job, f"{type(exc).__name__}: {one_line(exc)}", 1)
            finally:
                job.finished_at = utc_now()
                self._observed.pop(job.id, None)

    def _failed(self, job: Job, error: str, exit_code: int) -> None:
        """The job ended without a report: it failed with ``error``, and so did each of its files."""
        with self._guard:
            for file in job.files:
                file.state, file.outcome, file.reason = "failed", "failed", error
            job.error, job.exit_code, job.status = error, exit_code, "failed"

    def _count(self, report: IngestReport | None, status: str) -> None:
        if self.metrics is not None:
            self.metrics.ingested(report, status)


def outcomes(job: Job, report: IngestReport) -> list[FileProgress]:
    """The files of ``job`` once it ended with ``report``: each file's outcome from the report (an upload's files in
    their order, then any other file the run found; a job of server paths: the report's files), state done, failed
    or skipped."""
    found = {str(Path(f.path).resolve()): f for f in report.files}
    given = {str(Path(x.path).resolve()) for x in job.files}
    files = [*job.files, *(FileProgress.of(f.path) for key, f in found.items() if key not in given)]
    out = []
    for file in files:
        got = found.get(str(Path(file.path).resolve()))
        if got is None:
            out.append(file.model_copy(update={"state": "done"}))
            continue
        state: FileState = "failed" if got.outcome == "failed" else "skipped" if got.outcome == "skipped" else "done"
        out.append(
            file.model_copy(update={"state": state, "outcome": got.outcome, "chunks": got.chunks, "reason": got.reason})
        )
    return out
