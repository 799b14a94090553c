"""Stages 2-5 of ingestion for each group of parsed documents: chunk, distill, embed, write
(PIKE-RAG §5.1, §5.2.1, §5.3.1; the run's engine, kbgraph.ingest.engines, reads the files and forms the groups).

Each group is written in one unit of work (``kbgraph.ingest.write``); when a group fails, its documents are
processed again one at a time, so the failing document is reported and the others are written.

**Overlapped writes** (setting ``ingest_overlap_writes``, on by default): while the
database writes group k (its own process does the work: the FalkorDB redis server or Neo4j; a background thread
of this process only waits on the socket), this process embeds group k+1 (onnxruntime releases the GIL). The
order per group k+1 is::

    chunk(k+1) -> distill(k+1) -> [start write(k) in a thread] -> embed(k+1) -> [join write(k)]

so the write thread never runs while distill forks its worker processes (a child forked then could inherit a
lock the thread holds) nor while the main thread reads the store (the next group's parse checks the store for
unchanged documents). Documents are still written in order, the run's lock is checked (``lock.check()``)
before every write, a failed write is retried one document at a time (synchronously, after the join) and a
fatal error stops the run after the join. The last group is written in turn, so a run of one group is as
without overlap. Whatever ends the run (an error, Ctrl-C), the write thread is joined before it returns.

Seconds (``IngestReport.seconds``): ``write`` is the time the writes took wherever they ran; ``write_wait`` the
time the run's main thread spent on writes (its own writes plus waiting for background ones): equal to
``write`` without overlap, the writes' share of the wall time with it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kbgraph.errors import ConfigError, LockTimeout, SchemaMismatch, StoreUnavailable
from kbgraph.ingest.progress import Progress, Stage
from kbgraph.ingest.report import FileError, error_line
from kbgraph.ingest.sources import file_of, uri_to_path
from kbgraph.models import DocumentGraph
from kbgraph.settings import Settings
from kbgraph.store import GraphStore
from kbgraph.ingest.compute import chunk_documents, distill_graphs, embed_graphs, titles_for
from kbgraph.ingest.write import write_documents
from kbgraph.llm.base import LLM
from kbgraph.embed.base import Embedder

if TYPE_CHECKING:
    from kbgraph.ingest.lock import IngestLock
    from kbgraph.ingest.parse import ParsedDocument
    from kbgraph.ingest.run_state import RunState

log = logging.getLogger("kbgraph.ingest")

#: Errors that end the run at once instead of being recorded against a document.
FATAL = (ImportError, MemoryError, ConfigError, SchemaMismatch, StoreUnavailable, LockTimeout)
#: Name of the thread that writes a group in the background (tests look for it).
WRITE_THREAD = "kbgraph-ingest-write"


@dataclass
class GroupCut:
    """Where a group closes (settings ``ingest_group_size``, ``ingest_group_chars``), one rule for both engines so
    that they write the same units of work in the same order: documents come in order, ``before(n)`` says the
    open group must close before a document of ``n`` characters (it would take it over the limit; a huge
    document is a group of its own), ``add(n)`` counts the document in and says the group is now full."""

    size: int
    max_chars: int
    count: int = 0
    chars: int = 0

    def before(self, n: int) -> bool:
        return self.count > 0 and self.chars + n > self.max_chars

    def add(self, n: int) -> bool:
        self.count, self.chars = self.count + 1, self.chars + n
        return self.count >= self.size or self.chars >= self.max_chars

    def reset(self) -> None:
        self.count = self.chars = 0


def document_chars(doc: ParsedDocument) -> int:
    """Characters of ``doc``'s elements (what ``ingest_group_chars`` counts)."""
    return sum(len(e.text) for e in doc.elements)


@dataclass
class Built:
    """A group chunked, distilled and embedded, waiting for its write: ``group`` is its number (progress)."""

    docs: list[ParsedDocument]
    graphs: list[DocumentGraph]
    group: int


class BackgroundWrite:
    """``write()`` of one ``Built`` group run in a thread (``WRITE_THREAD``): ``seconds`` it took, ``error``
    it raised (any BaseException, kept for the main thread), ``thread`` for ``join``."""

    def __init__(self, built: Built, write: Callable[[], object]):
        self.built = built
        self.seconds = 0.0
        self.error: BaseException | None = None
        self._write = write
        self.thread = threading.Thread(target=self._run, name=WRITE_THREAD, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        t0 = time.perf_counter()
        try:
            self._write()
        except BaseException as exc:  # handed to the main thread at the join
            self.error = exc
        finally:
            self.seconds = time.perf_counter() - t0


class GroupRunner:
    """Runs the groups of one ingestion run (``run``) into ``store``, accounting in ``state`` (the run's
    ``RunState``: its ``report``; ``titles`` of the passage corpora read, read only; ``existing``, the ids of
    changed documents already in the graph, replaced when written; ``written``, {source file: {added, updated,
    chunks, warnings}}, filled here) and ``bar``. ``lock``: ``check()`` before each write; with per-file claims,
    ``release(keys)`` once a file's document is written. ``embedder``: a callable returning the embedder, loaded
    on first use."""

    def __init__(
        self,
        store: GraphStore,
        settings: Settings,
        state: RunState,
        bar: Progress,
        *,
        llm: LLM | None,
        embedder: Callable[[], Embedder],
        lock: IngestLock,
    ):
        self.store, self.settings, self.state, self.bar, self.llm = store, settings, state, bar, llm
        self.report = report = state.report
        self.embedder, self.lock = embedder, lock
        self.overlap = settings.ingest.ingest_overlap_writes
        self._writing: BackgroundWrite | None = None
        report.seconds.setdefault("write_wait", 0.0)

    # --- the loop ---------------------------------------------------------------------------------
    def run(self, groups: Iterable[list[ParsedDocument]]) -> None:
        """Process every group of ``groups`` (lists of parsed documents; ``bar.group`` is the number of the group
        just yielded). Raises a ``FATAL`` error (after the write thread is joined); any other error is recorded
        against its document in ``report.errors``."""
        pending: Built | None = None  # embedded, its write not started
        try:
            for docs in groups:
                group = self.bar.group
                if not self.overlap:
                    self.process(docs, group)
                    continue
                try:
                    graphs = self._prepare(docs, group)  # may fork (distill): no write thread runs now
                except FATAL:
                    raise
                except Exception as exc:
                    self.write_in_turn(pending)
                    pending = None
                    self._isolate(docs, group, exc)
                    continue
                if pending is not None:
                    self._start(pending)
                    pending = None
                try:
                    self._embed(graphs, group)
                except BaseException as exc:
                    isolate = isinstance(exc, Exception) and not isinstance(exc, FATAL)
                    self._finish(retry=isolate)
                    if not isolate or not isinstance(exc, Exception):  # (isolate implies an Exception)
                        raise
                    self._isolate(docs, group, exc)
                    continue
                self._finish()
                pending = Built(docs, graphs, group)
            self.write_in_turn(pending)  # the last group: nothing left to overlap it with
        finally:
            self._finish(retry=False)  # never leave the thread writing after the run returns

    def process(self, docs: list[ParsedDocument], group: int) -> None:
        """One group in turn: chunk, distill, embed, write; on a non-fatal error each document alone."""
        try:
            graphs = self._prepare(docs, group)
            self._embed(graphs, group)
            self._write(Built(docs, graphs, group))
        except FATAL:
            raise  # the installation, configuration or store is broken: no document would succeed
        except Exception as exc:
            self._isolate(docs, group, exc)

    def _isolate(self, docs: list[ParsedDocument], group: int, exc: Exception) -> None:
        """``docs`` failed together with ``exc``: one document is reported failed; several are processed again
        one at a time (in turn) to find the failing one."""
        if len(docs) == 1:
            self._failed(docs[0], exc)
            return
        log.warning("group of %d documents failed (%s); retrying one by one", len(docs), exc)
        for doc in docs:
            self.process([doc], group)

    def _failed(self, doc: ParsedDocument, exc: BaseException) -> None:
        self.report.errors.append(FileError(path=uri_to_path(doc.uri), error=error_line(exc)))
        self.bar.document_failed(doc.uri)

    # --- stages -----------------------------------------------------------------------------------
    def _prepare(self, docs: list[ParsedDocument], group: int) -> list[DocumentGraph]:
        """Chunk and distill ``docs`` (distill may fork worker processes; ``kbgraph.ingest.compute``)."""
        t0 = time.perf_counter()
        with self.bar.stage("chunk", f"{len(docs):,} documents", group=group) as st:
            graphs = chunk_documents(docs, self.settings, llm=self.llm)
            st.done(len(docs), "documents", f"{sum(len(g.chunks) for g in graphs):,} chunks")
        self.report.seconds["chunk"] += time.perf_counter() - t0

        t0 = time.perf_counter()
        n_chunks = sum(len(g.chunks) for g in graphs)
        with self.bar.stage("distill", f"{n_chunks:,} chunks", group=group) as st:
            distilled = distill_graphs(graphs, self.settings, llm=self.llm, titles=titles_for(docs, self.state.titles))
            st.done(
                n_chunks,
                "chunks",
                distilled_line(len(distilled.questions), len(distilled.triples), len(distilled.entities)),
            )
        self.report.seconds["distill"] += time.perf_counter() - t0
        return graphs

    def _embed(self, graphs: list[DocumentGraph], group: int) -> None:
        """Embed the layers of the group whose vectors are on (``kbgraph.ingest.compute.embed_graphs``)."""
        t0 = time.perf_counter()
        chunks = sum(len(g.chunks) for g in graphs)
        with self.bar.stage("embed", f"{chunks:,} chunks and their knowledge", group=group) as st:
            st.done(embed_graphs(graphs, self.settings, self.embedder()), "texts")
        self.report.seconds["embed"] += time.perf_counter() - t0

    def _replace(self, built: Built) -> set[str]:
        return {g.document.id for g in built.graphs} & self.state.existing

    def _write(self, built: Built) -> None:
        """Write ``built`` in this thread (one unit of work) and account for it."""
        t0 = time.perf_counter()
        try:
            with self.bar.stage("write", f"{len(built.graphs):,} documents", group=built.group) as st:
                self.lock.check()
                write_documents(self.store, built.graphs, replace_ids=self._replace(built))
                self._account(built, st)
        finally:
            seconds = time.perf_counter() - t0
            self.report.seconds["write"] += seconds
            self.report.seconds["write_wait"] += seconds

    def write_in_turn(self, built: Built | None) -> None:
        """Write ``built`` now (no overlap); on a non-fatal error its documents one at a time."""
        if built is None:
            return
        try:
            self._write(built)
        except FATAL:
            raise
        except Exception as exc:
            self._isolate(built.docs, built.group, exc)

    def _start(self, built: Built) -> None:
        """Check the lock, then write ``built`` in the background (``_finish`` joins it)."""
        self.lock.check()
        replace = self._replace(built)
        self._writing = BackgroundWrite(built, lambda: write_documents(self.store, built.graphs, replace_ids=replace))

    def _finish(self, *, retry: bool = True) -> None:
        """Join the background write, if any, and account for it: written, or (``retry``) its documents processed
        again one at a time, or (not ``retry``: the run is ending) each reported failed. Raises its error when
        fatal (or not an Exception)."""
        w = self._writing
        if w is None:
            return
        built = w.built
        t0 = time.perf_counter()
        what = f"{len(built.graphs):,} documents"
        with self.bar.stage("write", what, group=built.group, quiet=True):  # heartbeats name the wait
            w.thread.join()
        self._writing = None  # only once joined: a Ctrl-C during the join leaves it to the run's finally
        self.report.seconds["write_wait"] += time.perf_counter() - t0
        self.report.seconds["write"] += w.seconds
        if w.error is None:
            st = Stage("write", built.group, what)
            st.started = time.monotonic() - w.seconds  # the line gives the write's own time
            self._account(built, st)
            self.bar.stage_done(st)
        elif isinstance(w.error, FATAL) or not isinstance(w.error, Exception):
            raise w.error
        elif retry:
            self._isolate(built.docs, built.group, w.error)
        else:
            for doc in built.docs:
                self._failed(doc, w.error)

    def _account(self, built: Built, st: Stage) -> None:
        """``built`` was written: the report's counts, the per-file outcomes and the progress."""
        graphs, report = built.graphs, self.report
        replace = self._replace(built)
        chunks = sum(len(g.chunks) for g in graphs)
        self.bar.written([g.document.uri for g in graphs], chunks)
        st.done(len(graphs), "documents", f"{chunks:,} chunks")
        report.updated += len(replace)
        report.added += len(graphs) - len(replace)
        report.documents += len(graphs)
        report.chunks += chunks
        # per-file claims (kbgraph.ingest.claims): written, given back
        release: Callable[[list[str]], None] | None = getattr(self.lock, "release", None)
        if release is not None:  # (a passage corpus's claim is kept until the run ends: its other passages)
            release([g.document.uri for g in graphs if "#" not in g.document.uri])
        warnings = {d.uri: d.warnings for d in built.docs}
        for g in graphs:  # per source file, for report.files
            w = self.state.written.setdefault(file_of(g.document.uri), {"added": 0, "updated": 0, "chunks": 0})
            w.setdefault("warnings", [])
            w["updated" if g.document.id in replace else "added"] += 1
            w["chunks"] += len(g.chunks)
            w["warnings"] += warnings.get(g.document.uri, [])


def distilled_line(questions: int, triples: int, entities: int) -> str:
    """The detail of a distill progress line: what was distilled."""
    return f"{questions:,} atomic questions, {triples:,} triples, {entities:,} entities"


__all__ = [
    "FATAL",
    "WRITE_THREAD",
    "BackgroundWrite",
    "Built",
    "GroupCut",
    "GroupRunner",
    "distilled_line",
    "document_chars",
]
