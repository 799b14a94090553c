"""Ingestion jobs of ``POST /v1/kb/{name}/ingest`` and the MCP tool ``ingest``.

A job is one :meth:`kbgraph.kb.KnowledgeBase.ingest` call (PIKE-RAG §5.1-§5.2: parse, chunk, distill, embed,
write) run on a background thread with a store connection of its own, so questions are answered while it
writes (they see only complete documents). Jobs of one knowledge base run one after another, in the order
submitted (``queued`` until the previous one ends); across processes the library's ingestion lock applies as
for the CLI: with ``wait`` false a job finds another process's run and fails with the LockTimeout message
(``exit_code`` 75), with ``wait`` true it waits up to ``lock_timeout`` s.

Jobs live in memory (the newest :data:`KEEP` are kept); a job's report is also the ``(:IngestionRun)`` node the
library writes. A job is seen by the key that submitted it only (and by an unrestricted caller:
kbgraph.serve.access.unrestricted); to any other key it does not exist.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from kbgraph.errors import KBGraphError
from kbgraph.ingest.report import IngestReport
from kbgraph.serve.access import KeyScope, check_ingest_paths, resolved_roots, unrestricted
from kbgraph.serve.kbs import KBPool, check_name
from kbgraph.serve.uploads import discard_refused
from kbgraph.text import one_line, utc_now

if TYPE_CHECKING:
    from kbgraph.serve.metrics import Metrics

#: Finished jobs kept for GET /v1/jobs/{id}.
KEEP = 1000


class Job(BaseModel):
    """An ingestion job. ``status``: queued -> running -> done (``report`` holds the IngestReport; files that
    failed are in it, ``report.failed`` > 0) or failed (``error``: one line; ``exit_code``: the CLI's, e.g. 75
    when another run held the lock). ``paths``: as given, or for uploaded files where they were kept
    (``<home>/<kb>/uploads/<name>``, kbgraph.serve.uploads). Times are ISO 8601 UTC."""

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

    def submit(self, kb: str, paths: Sequence[str | Path], *, prune: bool = False, wait: bool = False,
               uploaded: bool = False, owner: KeyScope | None = None) -> Job:  # fmt: skip
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
        job = Job(id=uuid.uuid4().hex, kb=kb, paths=[str(p) for p in paths], prune=prune, wait=wait)
        with self._guard:
            self._jobs[job.id] = job
            self._owners[job.id] = owner.identity if owner is not None else None
            while len(self._jobs) > KEEP:
                self._owners.pop(self._jobs.popitem(last=False)[0], None)
            lock = self._kb_locks.setdefault(kb, threading.Lock())
        threading.Thread(target=self._run, args=(job, lock, within, uploaded), name=f"kbgraph-ingest-{job.id[:8]}",
                         daemon=True).start()  # fmt: skip
        return job

    def get(self, job_id: str, key: KeyScope | None = None) -> Job | None:
        """The job ``job_id`` (a copy) as ``key`` may see it (None: no keys configured), or None when it is
        unknown, forgotten, or submitted by another key while ``key`` is restricted."""
        with self._guard:
            job = self._jobs.get(job_id)
            if job is None or not (unrestricted(key) or (key is not None and self._owners.get(job_id) == key.identity)):
                return None
            return job.model_copy(deep=True)

    def _run(self, job: Job, lock: threading.Lock, within: list[Path] | None = None, uploaded: bool = False) -> None:
        with lock:
            job.status, job.started_at = "running", utc_now()
            try:
                with self.pool.writing(job.kb) as kb:
                    report = kb.ingest(job.paths, prune=job.prune, wait=job.wait, progress=False, within=within)
                if uploaded:
                    discard_refused(job.paths, report)
                job.report, job.exit_code = report, report.exit_code
                self._count(report, "done")  # before the status: a client that sees "done" sees it counted
                job.status = "done"
            except KBGraphError as exc:
                self._count(None, "failed")
                job.error, job.exit_code, job.status = one_line(exc), exc.exit_code, "failed"
            except Exception as exc:  # noqa: BLE001 - a job records its failure instead of killing the thread
                self._count(None, "failed")
                job.error, job.exit_code, job.status = f"{type(exc).__name__}: {one_line(exc)}", 1, "failed"
            finally:
                job.finished_at = utc_now()

    def _count(self, report: IngestReport | None, status: str) -> None:
        if self.metrics is not None:
            self.metrics.ingested(report, status)
