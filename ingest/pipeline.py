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

This module reads the files and forms the groups; beside it: ``sources`` (finding files), ``groups`` (a group through
chunk, distill, embed, write), ``report``, ``distill``, ``embed_layers``, ``write``, ``progress``, ``ray_engine``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kbgraph.errors import IngestError
from kbgraph.ingest.groups import Built, distilled_line, document_chars, GroupCut, GroupRunner
from kbgraph.ingest.progress import open_progress, Progress, Stage
from kbgraph.ingest.report import FileError, FileOutcome, IngestReport, WrittenCounts, file_outcomes
from kbgraph.ingest.sources import discover, Exclusions, uri_to_path
from kbgraph.settings import Settings
from kbgraph.store import GraphStore
from kbgraph.text import utc_now
from kbgraph.embed import get_embedder, prepare_models
from kbgraph.ingest.autotag import pending_chunks, tag_chunks
from kbgraph.ingest.claims import ClaimLock
from kbgraph.ingest.compute import parse_source
from kbgraph.ingest.lock import open_run_lock
from kbgraph.ingest.ocr import OcrOptions
from kbgraph.ingest.ray_engine import Batch, check_address, import_ray, RayCompute
from kbgraph.ingest.metadata import check_meta, Origin
from kbgraph.ingest.refresh import classify, write_updates
from kbgraph.ingest.unchanged import is_corpus, prune_documents, SourceCheck
from kbgraph.models import DocumentGraph, MetadataValue, stable_id
from kbgraph.llm.base import LLM
from kbgraph.embed.base import Embedder

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from kbgraph.ingest.lock import IngestLock
    from kbgraph.ingest.parse import ParsedDocument

# unstructured (imported lazily by the parsers) sends usage analytics unless this is set; kbgraph runs offline
os.environ.setdefault("DO_NOT_TRACK", "1")

log = logging.getLogger("kbgraph.ingest")


def _is_factory(embedder: Embedder | Callable[[], Embedder]) -> TypeIs[Callable[[], Embedder]]:
    """Whether ``embedder`` is a callable returning the embedder (loaded on first use) rather than one."""
    return callable(embedder) and not hasattr(embedder, "embed")


# --- the run ------------------------------------------------------------------------------------
class Ingestor:
    """One ingestion run over ``store`` with ``settings``; see ``run``."""

    def __init__(self, store: GraphStore, settings: Settings, *, llm: LLM | None = None, progress: bool | None = None,
                 embedder: Embedder | Callable[[], Embedder] | None = None,
                 progress_interval: float = 30.0):  # fmt: skip
        """``embedder``: an embedder, or a callable returning one (loaded only when something changed).
        ``progress``: True = bars (rich, on stderr), False = log lines on ``kbgraph.ingest``; default: bars
        when stdout and stderr are both terminals. ``progress_interval``: at most this many seconds between two
        log lines (heartbeat)."""
        self.store = store
        self.settings = settings
        self.llm = llm
        self.progress = (sys.stderr.isatty() and sys.stdout.isatty()) if progress is None else progress
        self.progress_interval = progress_interval
        #: files handed to a parser in this run (an unchanged file is hashed, not parsed)
        self.parsed = 0
        self._corpora: dict[str, int] = {}  # {corpus file URI: passages} parsed in this run (SourceFile records)
        self._check: SourceCheck | None = None  # the run's check of unchanged sources (_start_check)
        self._group = 0
        self._cut = GroupCut(settings.ingest.ingest_group_size, settings.ingest.ingest_group_chars)
        self._pending: list[tuple[ParsedDocument, DocumentGraph]] = []  # the ray engine's open group
        self._embedder = embedder
        self._existing: set[str] = set()  # ids of changed documents already in the graph
        self._titles: dict[str, str] = {}  # {document_id: title} of every passage corpus read in this run
        self._written: dict[str, WrittenCounts] = {}  # {source file: what was written of it} (report.files)
        self._lock: IngestLock | None = None  # the run's lock while it runs (kbgraph.ingest.lock): _run_lock
        self._claims: ClaimLock | None = None  # the lock when it is per-file claims (kbgraph.ingest.claims)
        self._skipped: list[FileOutcome] = []  # files skipped by the run (found by discover, or claimed by another)
        self._relative: dict[Path, str] = {}  # {resolved file: its path relative to the path given} (discover)
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

    @property
    def _source_check(self) -> SourceCheck:
        """The run's check of unchanged sources (``_start_check``: before the first file is read)."""
        if self._check is None:
            raise RuntimeError("no source check: _start_check() runs before the first file is read")
        return self._check

    def run(self, paths: Sequence[str | Path], *, prune: bool = False, wait: bool = False,
            exclude: Sequence[str] = (), within: Sequence[Path] | None = None,
            meta: Mapping[str, MetadataValue] | None = None) -> IngestReport:  # fmt: skip
        """Ingest ``paths`` (files, directories, .jsonl passage corpora). ``meta``: metadata keys given every
        document of the run (``--meta``; over its sidecar's and its own; kbgraph.ingest.metadata; a bad key or value
        raises ValueError before the run starts). ``exclude``: gitignore-style patterns
        of files to leave out (``kbgraph.ingest.sources``: besides the default rules and ``.kbgraphignore``
        files); each file left out is reported as skipped with its rule. ``within``: resolved folders no file
        outside of which is read (``discover``; ``kbgraph serve``'s serve_ingest_roots). Raises ValueError for a
        bad pattern, before the run starts. Raises LockTimeout if another run holds the knowledge base's lock: at
        once without ``wait``; with ``wait`` after logging "waiting up to N s for the lock held by <pid, host,
        since>" and ``lock_timeout`` seconds (kbgraph.ingest.lock). Raises LeaseLost (a LockTimeout) before a
        write once a Neo4j run's lease is lost (kbgraph.ingest.lease)."""
        Exclusions(exclude)  # a bad pattern fails before the run
        self._meta = check_meta(meta or {})
        if self.settings.ingest.ingest_engine == "ray":
            import_ray()  # so do a missing Ray (ConfigError naming the extra) and a cluster that does not answer
            check_address(self.settings.ingest.ray_address)
        with open_run_lock(self.store, self.settings, wait=wait, prune=prune) as self._lock:
            return self._run(paths, prune, exclude, within)

    def _run(self, paths: Sequence[str | Path], prune: bool, exclude: Sequence[str] = (),
             within: Sequence[Path] | None = None) -> IngestReport:  # fmt: skip
        t_start = time.perf_counter()
        report = IngestReport(run_id=f"run:{uuid.uuid4().hex[:16]}", started_at=utc_now())
        lock = self._run_lock
        ttl_ms = int(lock.ttl * 1000) if isinstance(lock, ClaimLock) else None  # known alive from its first statement
        self.store.run(
            "ingest/start_run",
            {"id": report.run_id, "started_at": report.started_at, "paths": [str(p) for p in paths], "ttl_ms": ttl_ms},
        )
        if isinstance(lock, ClaimLock):
            self._claims = lock
            self._claims.attach_run(report.run_id)
        self._repair(report)
        skipped = self._skipped = []
        files = discover(paths, report.errors, skipped, exclude=exclude, ocr=OcrOptions.from_settings(self.settings),
                         within=within, relative=self._relative)  # fmt: skip
        seen_uris: set[str] = set()
        try:
            with prepare_models(self.settings, bool(files) and (self._embedder is None or _is_factory(self._embedder))), \
                    open_progress(len(files), bars=self.progress, interval=self.progress_interval) as bar:
                runner = GroupRunner(
                    self.store, self.settings, report, bar, llm=self.llm, embedder=lambda: self.embedder,
                    lock=lock, titles=self._titles, existing=self._existing, written=self._written,
                )  # fmt: skip
                if self.settings.ingest.ingest_engine == "ray":
                    self._run_ray(files, report, seen_uris, bar, runner)
                else:
                    runner.run(self._groups(files, report, seen_uris, bar))
                self._record_corpora(report)
                if self.settings.tagging.auto_tagging and self.llm is not None:
                    self._tag(report, bar)
                bar.finish()
            if prune:
                report.deleted = prune_documents(self.store, files, seen_uris, self._run_lock.check)
            report.failed = len(report.errors)
            report.status = "failed" if report.failed else "completed"
        except BaseException:
            report.status = "interrupted"
            raise
        finally:
            report.failed = len(report.errors)
            report.skipped = len(skipped)
            report.files = file_outcomes(files, skipped, report.errors, self._written)
            report.finished_at = utc_now()
            report.seconds["total"] = round(time.perf_counter() - t_start, 3)
            with contextlib.suppress(Exception):
                self.store.run(
                    "ingest/finish_run",
                    {
                        "id": report.run_id, "finished_at": report.finished_at, "status": report.status,
                        "added": report.added, "updated": report.updated, "unchanged": report.unchanged,
                        "deleted": report.deleted, "failed": report.failed, "chunks": report.chunks,
                        "errors": [f"{e.path}: {e.error}" for e in report.errors][:1000],
                        "seconds": report.seconds["total"],
                    },
                )  # fmt: skip
        return report

    # --- grouping: parse and skip unchanged ----------------------------------------------------
    def _repair(self, report: IngestReport) -> None:
        """Runs a killed run left 'running' become 'interrupted', their end unknown (this run holds the lock,
        so no other run is alive; with per-file claims, the runs alive keep their ``expires_at`` renewed and are
        left alone). Its documents left 'writing' are not served and are rewritten when read."""
        for row in self.store.run("ingest/interrupt_stale_runs", {"id": report.run_id, "noticed_at": report.started_at}):
            log.warning("ingestion run %s (started %s) never finished: marked interrupted", row["id"], row["started_at"])

    def _groups(self, files: list[Path], report: IngestReport, seen: set[str],
                bar: Progress) -> Iterator[list[ParsedDocument]]:  # fmt: skip
        """The new or changed documents of ``files``, read in order, in groups of at most ingest_group_size
        documents that close once they hold ingest_group_chars characters or before a document that would
        take them over it (a huge document is a group of its own and holds back no other file). An unchanged
        file is recognised from the hash of its raw bytes and not parsed (kbgraph.ingest.unchanged)."""
        cut = self._cut
        self._start_check(files)
        pending: list[ParsedDocument] = []
        for path in files:
            for doc in self._read(path, report, seen, bar) or ():
                n = document_chars(doc)
                if cut.before(n):
                    yield self._close_group(pending, bar)
                    pending = []
                pending.append(doc)
                if cut.add(n):
                    yield self._close_group(pending, bar)
                    pending = []
        if pending:
            yield self._close_group(pending, bar)

    def _origin(self, path: Path) -> Origin:
        """Where ``path`` comes from in this run: its path relative to the path given, the run's ``--meta``."""
        return Origin(path=self._relative.get(path.resolve(), path.name), meta=self._meta)

    def _start_check(self, files: list[Path]) -> None:
        self._check = SourceCheck(self.store, self.settings.ingest.max_file_bytes, origin=self._origin)
        self._check.prefetch(files)
        self._titles.update(self._check.run_titles(files))  # before any group is distilled: links do not depend on order

    def _read(self, path: Path, report: IngestReport, seen: set[str], bar: Progress, *,
              parse_files: bool = True) -> list[ParsedDocument] | None:  # fmt: skip
        """The new or changed documents of ``path`` ([] when it is unchanged, hashed but not parsed, or failed
        to parse: reported). ``parse_files=False`` (the ray engine): a file that is not a passage corpus and
        not unchanged is not parsed here; None says so (its workers parse it). With per-file claims (setting
        ingest_writers=claims) the file is claimed first: one a live other run claimed is reported skipped ("claimed
        by <host> (pid N)"), and a claim is given back at once when nothing of the file is to be written."""
        key = path.resolve().as_uri()
        if self._claims is not None:
            holder = self._claims.take(key)
            if holder is not None:  # a live other run writes it
                self._skipped.append(FileOutcome(path=str(path), outcome="skipped", reason=f"claimed by {holder}"))
                bar.file_read(key, fresh=0)
                return []
            self._source_check.prefetch([path])  # its state now, not at the start: another run may have written it
        got = self._read_claimed(path, key, report, seen, bar, parse_files=parse_files)
        if not got and got is not None and self._claims is not None:
            self._claims.release([key])  # unchanged or failed: nothing of it to write
        return got

    def _read_claimed(self, path: Path, key: str, report: IngestReport, seen: set[str], bar: Progress, *,
                      parse_files: bool) -> list[ParsedDocument] | None:  # fmt: skip
        t0 = time.perf_counter()
        try:
            with bar.stage("parse", path.name, quiet=True):
                same = self._source_check.check(path)
                if same is None:
                    self.parsed += 1
                    if not parse_files and not is_corpus(path):
                        return None
                    docs = parse_source(path, self.settings, self._origin(path))
                    if is_corpus(path):
                        self._titles.update((stable_id("doc", d.uri), d.title) for d in docs)
                        self._corpora[key] = len(docs)
        except IngestError as exc:
            report.errors.append(FileError(path=str(path), error=str(exc)))
            bar.file_read(key, fresh=0, failed=True)
            return []
        except Exception as exc:  # a parser bug must not stop the run
            report.errors.append(FileError(path=str(path), error=f"{type(exc).__name__}: {exc}"))
            bar.file_read(key, fresh=0, failed=True)
            return []
        finally:
            report.seconds["parse"] += time.perf_counter() - t0
        if same is not None:  # unchanged: not parsed (its metadata updated in place when only it changed)
            self._update_metadata(same.updates, report)
            report.unchanged += same.documents
            seen.update(same.uris)
            self._titles.update(same.titles)
            bar.file_read(key, fresh=0, unchanged=same.documents)
            return []
        return self._fresh(key, docs, report, seen, bar)

    def _fresh(self, key: str, docs: list[ParsedDocument], report: IngestReport, seen: set[str],
               bar: Progress) -> list[ParsedDocument]:  # fmt: skip
        """The documents of ``docs`` (parsed from the file ``key``) to write: new, changed or incomplete."""
        seen.update(d.uri for d in docs)
        got = classify(self.store, docs)
        self._existing.update(got.existing)
        self._update_metadata(got.updates, report)
        report.unchanged += got.unchanged
        bar.file_read(key, fresh=len(got.fresh), unchanged=got.unchanged)
        return got.fresh

    def _update_metadata(self, rows: list[dict[str, object]], report: IngestReport) -> None:
        """Write the metadata-only updates ``rows`` of unchanged documents (kbgraph.ingest.refresh)."""
        if rows:
            self._run_lock.check()
            report.metadata_updated += write_updates(self.store, rows)

    # --- the ray engine (kbgraph.ingest.ray_engine) ------------------------------------------------
    def _run_ray(self, files: list[Path], report: IngestReport, seen: set[str], bar: Progress,
                 runner: GroupRunner) -> None:  # fmt: skip
        """Setting ingest_engine=ray: files checked here as by the local engine (unchanged ones skipped, corpora read);
        the rest parsed, chunked, distilled and embedded on Ray and written here, in order, in the local engine's
        groups, by ``runner`` (the same write path, unit of work and retries)."""
        self._start_check(files)
        remote: list[Path] = []
        passages: list[ParsedDocument] = []
        for path in files:
            docs = self._read(path, report, seen, bar, parse_files=False)
            if docs is None:
                remote.append(path)
            else:
                passages += docs
        if not remote and not passages:
            return  # nothing new: Ray is not started
        origins = {p: self._origin(p) for p in remote}
        batches = RayCompute(self.settings, llm=self.llm, titles=self._titles).batches(remote, passages, origins)
        what = f"{len(remote):,} files and {len(passages):,} passages on Ray"
        try:
            while True:
                with bar.stage("compute", what, group=self._group + 1, quiet=True):  # heartbeats name the wait
                    batch = next(batches, None)
                if batch is None:
                    break
                self._ray_group(batch, report, seen, bar, runner)
            self._write_ray_group(bar, runner)
        finally:
            batches.close()  # shuts down the local Ray it started

    def _ray_group(self, batch: Batch, report: IngestReport, seen: set[str], bar: Progress,
                   runner: GroupRunner) -> None:  # fmt: skip
        """Account for one batch computed on Ray (files read, documents failed); add the rest to the open group,
        written when the local engine's rule closes it (``GroupCut``): both engines write the same groups."""
        for stage in ("parse", "chunk", "distill", "embed"):
            report.seconds[stage] += batch.seconds.get(stage, 0.0)
        for w in batch.works:
            if w.fatal is not None:
                raise w.fatal  # the installation or configuration is broken: no document would succeed
        docs = chunks = 0
        for w in batch.works:
            key = Path(w.path).resolve().as_uri()
            if not w.parsed:
                report.errors.append(FileError(path=w.path, error=w.error or "not parsed"))
                bar.file_read(key, fresh=0, failed=True)
                continue
            doc = w.doc
            assert doc is not None  # a parsed file's document (ray_engine.parse_chunk)
            if "#" not in doc.uri and not self._fresh(key, [doc], report, seen, bar):
                continue  # a file whose document is unchanged after all (same content, other bytes)
            n = document_chars(doc)
            if self._cut.before(n):
                self._write_ray_group(bar, runner)
            full = self._cut.add(n)  # a failed document counts, as in the local engine's groups
            if w.error is not None:
                report.errors.append(FileError(path=uri_to_path(doc.uri), error=w.error))
                bar.document_failed(doc.uri)
            else:
                assert w.graph is not None  # chunked, and no stage failed
                self._pending.append((doc, w.graph))
                docs, chunks = docs + 1, chunks + len(w.graph.chunks)
            if full:
                self._write_ray_group(bar, runner)
        if not docs:
            return
        group, counts = self._group + 1, distilled_line(batch.questions, batch.triples, batch.entities)
        for name, n, unit, detail in (("chunk", docs, "documents", f"{chunks:,} chunks"),
                                      ("distill", chunks, "chunks", counts), ("embed", batch.texts, "texts", "")):  # fmt: skip
            st = Stage(name, group, "")
            st.started = time.monotonic() - batch.seconds.get(name, 0.0)  # the line gives the workers' time
            st.done(n, unit, detail)
            bar.stage_done(st)

    def _write_ray_group(self, bar: Progress, runner: GroupRunner) -> None:
        """Write the open group of the ray engine (if it holds a document to write) and start the next."""
        if self._pending:
            self._group += 1
            bar.group_ready(self._group, len(self._pending), self._cut.chars)
            runner.write_in_turn(Built([d for d, _ in self._pending], [g for _, g in self._pending], self._group))
        self._pending = []
        self._cut.reset()

    def _close_group(self, docs: list[ParsedDocument], bar: Progress) -> list[ParsedDocument]:
        self._group += 1
        bar.group_ready(self._group, len(docs), self._cut.chars)
        self._cut.reset()
        return docs

    def _record_corpora(self, report: IngestReport) -> None:
        """Record every passage corpus parsed in this run none of whose passages failed (SourceFile)."""
        failed = {e.path.split("#", 1)[0] for e in report.errors}
        self._run_lock.check()
        for uri, passages in self._corpora.items():
            if uri_to_path(uri) not in failed:
                self._source_check.record(uri, passages, utc_now())

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
                    self.store, self.settings, self.llm, self.embedder, ids, before_write=self._run_lock.check,
                    on_batch=lambda done, total: bar.line(f"tag: {done:,}/{total:,} chunks asked"),
                )  # fmt: skip
                t = report.tagging
                st.done(t.tagged, "chunks", f"{t.tags:,} tags ({t.new_tags:,} new), {t.failed} failed"
                        + (f"; {t.stopped}" if t.stopped else ""))  # fmt: skip
        report.seconds["tag"] += time.perf_counter() - t0
