"""L0 ingestion: files -> the three-layer graph (PIKE-RAG §5.1, §5.2.1, §5.3.1; docs/architecture.md).

Stages: parse (``parse``) -> structure and chunk (``chunk``) -> distill (``distill``) -> embed
(``kbgraph.embed``) -> write (``write``), then, with an LLM and ``auto_tagging`` on, tag (``autotag``: once per
run, after every group is written, the chunks not tagged yet; PIKE-RAG §5.2.2). Documents move through the
stages in groups of at most ``settings.ingest.ingest_group_size`` documents and ``settings.ingest.ingest_group_chars``
characters so that spaCy and the embedder work in large batches; each group is written in one unit of work,
so a failure leaves none of its documents behind (and a failed group is retried one document at a time).
The database writes group k while this process embeds group k+1 (``groups``; setting ``ingest_overlap_writes``).

Incremental and cron-safe: a document's id comes from its source URI and its content is hashed (sha256);
an unchanged file is recognised from the hash of its raw bytes before it is parsed, and an unchanged,
complete document is skipped with no write (``kbgraph.ingest.unchanged``); a changed one has its subgraph
replaced; with ``prune`` documents whose source vanished are deleted. One lock per knowledge base keeps two
runs from interleaving (``kbgraph.ingest.lock``): a lease in the database for Neo4j, so runs on other machines
are kept out too (``kbgraph.ingest.lease``; a run that loses it stops before its next write), a file lock for
the embedded FalkorDB store; with ``ingest_writers = "claims"`` several Neo4j runs write at once, sharing the
files by per-file claims (``kbgraph.ingest.claims``). Every run is recorded as an ``(:IngestionRun)`` node; a run
that finds another still 'running' (killed) marks it 'interrupted'. Progress: ``kbgraph.ingest.progress``
(a line per stage per group, and at least every 30 s, when stdout or stderr is not a terminal).

This module runs a run: the lock, finding the files, the ``(:IngestionRun)``, tagging. Beside it: ``engines`` (where
the documents are computed, setting ``ingest_engine``: ``local`` in this process, ``ray`` on a Ray cluster,
``ray_run`` and ``ray_engine``), ``reader`` (a file's new or changed documents), ``run_state`` (what the run's
parts share), ``sources`` (finding files), ``groups`` (a group through chunk, distill, embed, write), ``report``,
``distill``, ``embed_layers``, ``write``, ``progress``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kbgraph.embed import get_embedder, prepare_models
from kbgraph.embed.base import Embedder
from kbgraph.ingest.autotag import pending_chunks, tag_chunks
from kbgraph.ingest.claims import ClaimLock
from kbgraph.ingest.engines import EngineRun, get_engine
from kbgraph.ingest.groups import GroupCut, GroupRunner
from kbgraph.ingest.lock import open_run_lock
from kbgraph.ingest.metadata import check_meta
from kbgraph.ingest.ocr import OcrOptions
from kbgraph.ingest.progress import open_progress, Progress
from kbgraph.ingest.reader import SourceReader
from kbgraph.ingest.report import file_outcomes, IngestReport
from kbgraph.ingest.run_state import RunState
from kbgraph.ingest.sources import discover, Exclusions
from kbgraph.ingest.unchanged import prune_documents
from kbgraph.llm.base import LLM
from kbgraph.models import MetadataValue
from kbgraph.settings import Settings
from kbgraph.store import GraphStore
from kbgraph.text import utc_now

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from kbgraph.ingest.lock import IngestLock

# unstructured (imported lazily by the parsers) sends usage analytics unless this is set; kbgraph runs offline
os.environ.setdefault("DO_NOT_TRACK", "1")

log = logging.getLogger("kbgraph.ingest")


def _is_factory(embedder: Embedder | Callable[[], Embedder]) -> TypeIs[Callable[[], Embedder]]:
    """Whether ``embedder`` is a callable returning the embedder (loaded on first use) rather than one."""
    return callable(embedder) and not hasattr(embedder, "embed")


# --- the run ------------------------------------------------------------------------------------
class Ingestor:
    """One ingestion run over ``store`` with ``settings``; see ``run``. The engine (setting ``ingest_engine``,
    ``kbgraph.ingest.engines``) decides where the documents are computed; the run holds the lock, finds the files,
    records itself and tags, whatever the engine."""

    def __init__(
        self,
        store: GraphStore,
        settings: Settings,
        *,
        llm: LLM | None = None,
        progress: bool | None = None,
        embedder: Embedder | Callable[[], Embedder] | None = None,
        progress_interval: float = 30.0,
    ):
        """``embedder``: an embedder, or a callable returning one (loaded only when something changed).
        ``progress``: True = bars (rich, on stderr), False = log lines on ``kbgraph.ingest``; default: bars
        when stdout and stderr are both terminals. ``progress_interval``: at most this many seconds between two
        log lines (heartbeat). Raises ConfigError for an unknown setting ``ingest_engine`` (naming the engines)."""
        self.store = store
        self.settings = settings
        self.llm = llm
        self.progress = (sys.stderr.isatty() and sys.stdout.isatty()) if progress is None else progress
        self.progress_interval = progress_interval
        self.engine = get_engine(settings.ingest.ingest_engine)
        self._embedder = embedder
        self._lock: IngestLock | None = None  # the run's lock while it runs (kbgraph.ingest.lock): _run_lock
        self._meta: dict[str, MetadataValue] = {}  # the run's --meta keys (kbgraph.ingest.metadata)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = get_embedder(self.settings)
        elif _is_factory(self._embedder):
            self._embedder = self._embedder()
        return self._embedder

    @property
    def _run_lock(self) -> IngestLock:
        """The run's lock: ``run`` holds it while the run runs."""
        if self._lock is None:
            raise RuntimeError("the ingestion lock is held only while run() runs")
        return self._lock

    def run(
        self,
        paths: Sequence[str | Path],
        *,
        prune: bool = False,
        wait: bool = False,
        exclude: Sequence[str] = (),
        within: Sequence[Path] | None = None,
        meta: Mapping[str, MetadataValue] | None = None,
    ) -> IngestReport:
        """Ingest ``paths`` (files, directories, .jsonl passage corpora). ``meta``: metadata keys given every
        document of the run (``--meta``; over its sidecar's and its own; kbgraph.ingest.metadata; a bad key or value
        raises ValueError before the run starts). ``exclude``: gitignore-style patterns
        of files to leave out (``kbgraph.ingest.sources``: besides the default rules and ``.kbgraphignore``
        files); each file left out is reported as skipped with its rule. ``within``: resolved folders no file
        outside of which is read (``discover``; ``kbgraph serve``'s serve_ingest_roots). Raises ValueError for a
        bad pattern, before the run starts. Raises ConfigError before the run starts when its engine cannot run
        (``IngestEngine.check``: for ``ray``, Ray missing or no cluster at ``ray_address``). Raises LockTimeout if
        another run holds the knowledge base's lock: at
        once without ``wait``; with ``wait`` after logging "waiting up to N s for the lock held by <pid, host,
        since>" and ``lock_timeout`` seconds (kbgraph.ingest.lock). Raises LeaseLost (a LockTimeout) before a
        write once a Neo4j run's lease is lost (kbgraph.ingest.lease)."""
        Exclusions(exclude)  # a bad pattern fails before the run
        self._meta = check_meta(meta or {})
        self.engine.check(self.settings)  # e.g. a missing Ray (ConfigError naming the extra), a silent cluster
        with open_run_lock(self.store, self.settings, wait=wait, prune=prune) as self._lock:
            return self._run(paths, prune, exclude, within)

    def _run(
        self,
        paths: Sequence[str | Path],
        prune: bool,
        exclude: Sequence[str] = (),
        within: Sequence[Path] | None = None,
    ) -> IngestReport:
        t_start = time.perf_counter()
        report = IngestReport(run_id=f"run:{uuid.uuid4().hex[:16]}", started_at=utc_now())
        state = RunState(
            report,
            GroupCut(self.settings.ingest.ingest_group_size, self.settings.ingest.ingest_group_chars),
            meta=self._meta,
        )
        lock = self._run_lock
        ttl_ms = int(lock.ttl * 1000) if isinstance(lock, ClaimLock) else None  # known alive from its first statement
        self.store.run(
            "ingest/start_run",
            {"id": report.run_id, "started_at": report.started_at, "paths": [str(p) for p in paths], "ttl_ms": ttl_ms},
        )
        if isinstance(lock, ClaimLock):
            lock.attach_run(report.run_id)
        self._repair(report)
        files = discover(
            paths,
            report.errors,
            state.skipped,
            exclude=exclude,
            ocr=OcrOptions.from_settings(self.settings),
            within=within,
            relative=state.relative,
        )
        try:
            with (
                prepare_models(self.settings, bool(files) and (self._embedder is None or _is_factory(self._embedder))),
                open_progress(len(files), bars=self.progress, interval=self.progress_interval) as bar,
            ):
                reader = self._compute(files, state, bar)
                reader.record_corpora()
                if self.settings.tagging.auto_tagging and self.llm is not None:
                    self._tag(report, bar)
                bar.finish()
            if prune:
                report.deleted = prune_documents(self.store, files, state.seen, self._run_lock.check)
            report.failed = len(report.errors)
            report.status = "failed" if report.failed else "completed"
        except BaseException:
            report.status = "interrupted"
            raise
        finally:
            report.files = file_outcomes(files, state.skipped, report.errors, state.written)
            report.seconds["total"] = round(time.perf_counter() - t_start, 3)
            self._finish(report, len(state.skipped))
        return report

    def _compute(self, files: list[Path], state: RunState, bar: Progress) -> SourceReader:
        """``files`` read, computed and written by the run's engine; the reader it read them with."""
        lock = self._run_lock
        reader = SourceReader(self.store, self.settings, state, bar, lock)
        runner = GroupRunner(
            self.store, self.settings, state, bar, llm=self.llm, embedder=lambda: self.embedder, lock=lock
        )
        self.engine.run(files, EngineRun(self.settings, self.llm, state, reader, runner, bar))
        return reader

    def _finish(self, report: IngestReport, skipped: int) -> None:
        """The run's end in ``report`` and in its ``(:IngestionRun)`` (never raises: the run's own error wins)."""
        report.failed = len(report.errors)
        report.skipped = skipped
        report.finished_at = utc_now()
        with contextlib.suppress(Exception):
            self.store.run(
                "ingest/finish_run",
                {
                    "id": report.run_id,
                    "finished_at": report.finished_at,
                    "status": report.status,
                    "added": report.added,
                    "updated": report.updated,
                    "unchanged": report.unchanged,
                    "deleted": report.deleted,
                    "failed": report.failed,
                    "chunks": report.chunks,
                    "errors": [f"{e.path}: {e.error}" for e in report.errors][:1000],
                    "seconds": report.seconds["total"],
                },
            )

    def _repair(self, report: IngestReport) -> None:
        """Runs a killed run left 'running' become 'interrupted', their end unknown (this run holds the lock,
        so no other run is alive; with per-file claims, the runs alive keep their ``expires_at`` renewed and are
        left alone). Its documents left 'writing' are not served and are rewritten when read."""
        for row in self.store.run(
            "ingest/interrupt_stale_runs", {"id": report.run_id, "noticed_at": report.started_at}
        ):
            log.warning(
                "ingestion run %s (started %s) never finished: marked interrupted", row["id"], row["started_at"]
            )

    # --- tag (auto-tagging, PIKE-RAG §5.2.2) --------------------------------------------------------
    def _tag(self, report: IngestReport, bar: Progress) -> None:
        """Stage ``tag``, once after every group is written: the LLM tags the chunks not tagged yet (new and
        rewritten chunks, and those whose request failed before; ``kbgraph.ingest.autotag``). A chunk whose
        request fails is in ``report.tagging.errors`` and does not fail the run."""
        assert self.llm is not None  # run() tags only with an LLM
        t0 = time.perf_counter()
        ids = pending_chunks(self.store)
        if ids:
            with bar.stage("tag", f"{len(ids):,} chunks") as st:
                report.tagging = tag_chunks(
                    self.store,
                    self.settings,
                    self.llm,
                    self.embedder,
                    ids,
                    before_write=self._run_lock.check,
                    on_batch=lambda done, total: bar.line(f"tag: {done:,}/{total:,} chunks asked"),
                )
                t = report.tagging
                st.done(
                    t.tagged,
                    "chunks",
                    f"{t.tags:,} tags ({t.new_tags:,} new), {t.failed} failed"
                    + (f"; {t.stopped}" if t.stopped else ""),
                )
        report.seconds["tag"] += time.perf_counter() - t0
