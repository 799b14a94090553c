"""L0 ingestion: files -> the three-layer graph (PIKE-RAG §5.1, §5.2.1, §5.3.1; ARCHITECTURE.md).

Stages: parse (``parse``) -> structure and chunk (``chunk``) -> distill (``distill``) -> embed
(``kbgraph.embed``) -> write (``write``). Documents move through the stages in groups of at most
``settings.ingest_group_size`` documents and ``settings.ingest_group_chars`` characters so that spaCy and the
embedder work in large batches; each group is written in one unit of work, so a failure leaves none of its
documents behind (and a failed group is retried one document at a time).

Incremental and cron-safe: a document's id comes from its source URI and its content is hashed (sha256);
an unchanged, complete document is skipped with no write; a changed one has its subgraph replaced; with
``prune`` documents whose source vanished are deleted. A file lock per knowledge base keeps two runs from
interleaving. Every run is recorded as an ``(:IngestionRun)`` node.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout
from pydantic import BaseModel, Field

from kbgraph.errors import ConfigError, IngestError, LockTimeout, SchemaMismatch, StoreUnavailable
from kbgraph.models import DocumentGraph
from kbgraph.settings import Settings
from kbgraph.store import GraphStore

# unstructured (imported lazily by the parsers) sends usage analytics unless this is set; kbgraph runs offline
os.environ.setdefault("DO_NOT_TRACK", "1")

log = logging.getLogger("kbgraph.ingest")

#: Extensions ingested from directories (a file named explicitly is always tried).
SUPPORTED = {".pdf", ".docx", ".html", ".htm", ".pptx", ".md", ".markdown", ".txt", ".text", ".eml", ".jsonl"}
STAGES = ("parse", "chunk", "distill", "embed", "write")
#: Errors that end the run at once instead of being recorded against a document.
_FATAL = (ImportError, MemoryError, ConfigError, SchemaMismatch, StoreUnavailable, LockTimeout)


class FileError(BaseModel):
    path: str
    error: str


class IngestReport(BaseModel):
    """Summary of one run (also stored on its IngestionRun node). ``seconds``: wall time per stage."""

    run_id: str
    started_at: str
    finished_at: str | None = None
    status: str = "running"
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: int = 0
    documents: int = 0
    chunks: int = 0
    errors: list[FileError] = Field(default_factory=list)
    seconds: dict[str, float] = Field(default_factory=lambda: dict.fromkeys((*STAGES, "total"), 0.0))

    @property
    def exit_code(self) -> int:
        """0 all ok, 1 some files failed."""
        return 1 if self.failed else 0


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# --- sources --------------------------------------------------------------------------------------
def discover(paths: Iterable[str | Path], errors: list[FileError]) -> list[Path]:
    """Files under ``paths`` (directories walked, symlinks followed once, loops reported)."""
    found: list[Path] = []
    seen_dirs: set[tuple[int, int]] = set()

    def walk(directory: Path) -> None:
        try:
            st = directory.stat()
        except OSError as exc:
            errors.append(FileError(path=str(directory), error=f"cannot read directory: {exc.strerror}"))
            return
        key = (st.st_dev, st.st_ino)
        if key in seen_dirs:
            errors.append(FileError(path=str(directory), error="symlink loop: directory already visited, skipped"))
            return
        seen_dirs.add(key)
        try:
            entries = sorted(directory.iterdir())
        except OSError as exc:
            errors.append(FileError(path=str(directory), error=f"cannot list directory: {exc.strerror}"))
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                walk(entry)
            elif entry.is_file() and entry.suffix.lower() in SUPPORTED:
                found.append(entry)

    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            walk(path)
        elif path.is_file():
            found.append(path)
        else:
            errors.append(FileError(path=str(path), error="no such file or directory"))
    unique: dict[Path, None] = {}
    for f in found:
        unique.setdefault(f.resolve(), None)
    return list(unique)


# --- the run ------------------------------------------------------------------------------------
class Ingestor:
    """One ingestion run over ``store`` with ``settings``; see ``run``."""

    def __init__(self, store: GraphStore, settings: Settings, *, llm: Any = None, progress: bool | None = None,
                 embedder: Any = None):  # fmt: skip
        """``embedder``: an embedder, or a callable returning one (loaded only when something changed)."""
        self.store = store
        self.settings = settings
        self.llm = llm
        self.progress = sys.stderr.isatty() if progress is None else progress
        self._embedder = embedder
        self._existing: set[str] = set()  # ids of changed documents already in the graph
        self._titles: dict[str, str] = {}  # {document_id: title} of every passage corpus read in this run

    @property
    def embedder(self):
        if self._embedder is None:
            from kbgraph.embed import get_embedder

            self._embedder = get_embedder(self.settings)
        elif callable(self._embedder) and not hasattr(self._embedder, "embed"):
            self._embedder = self._embedder()
        return self._embedder

    def run(self, paths: Sequence[str | Path], *, prune: bool = False, wait: bool = False) -> IngestReport:
        """Ingest ``paths`` (files, directories, .jsonl passage corpora). Raises LockTimeout if another run
        holds the knowledge base's lock (after ``lock_timeout`` seconds with ``wait``, at once without)."""
        lock_path = self.settings.kb_dir / "ingest.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(lock_path), timeout=self.settings.lock_timeout if wait else 0)
        try:
            lock.acquire()
        except Timeout as exc:
            raise LockTimeout(
                f"another `kbgraph ingest` is running on knowledge base {self.settings.name!r}; "
                "retry later or pass --wait"
            ) from exc
        try:
            return self._run(paths, prune)
        finally:
            lock.release()

    def _run(self, paths: Sequence[str | Path], prune: bool) -> IngestReport:
        t_start = time.perf_counter()
        report = IngestReport(run_id=f"run:{uuid.uuid4().hex[:16]}", started_at=_now())
        self.store.run(
            "ingest/start_run",
            {"id": report.run_id, "started_at": report.started_at, "paths": [str(p) for p in paths]},
        )
        files = discover(paths, report.errors)
        seen_uris: set[str] = set()
        try:
            with self._progress() as bar:
                for group in self._groups(files, report, seen_uris, bar):
                    self._process(group, report, bar)
            if prune:
                report.deleted = self._prune(files, seen_uris)
            report.failed = len(report.errors)
            report.status = "failed" if report.failed else "completed"
        except BaseException:
            report.status = "interrupted"
            raise
        finally:
            report.failed = len(report.errors)
            report.finished_at = _now()
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
    def _groups(self, files: list[Path], report: IngestReport, seen: set[str], bar) -> Iterator[list]:
        from kbgraph.ingest.parse import parse_file, parse_passages_jsonl
        from kbgraph.models import stable_id

        size, max_chars = self.settings.ingest_group_size, self.settings.ingest_group_chars
        pending: list = []
        chars = 0
        for path in files:
            t0 = time.perf_counter()
            try:
                if path.suffix.lower() == ".jsonl":
                    docs = list(parse_passages_jsonl(path))
                    self._titles.update((stable_id("doc", d.uri), d.title) for d in docs)
                else:
                    docs = [parse_file(path, max_bytes=self.settings.max_file_bytes)]
            except IngestError as exc:
                report.errors.append(FileError(path=str(path), error=str(exc)))
                bar.advance("parse", 1)
                continue
            except Exception as exc:  # a parser bug must not stop the run
                report.errors.append(FileError(path=str(path), error=f"{type(exc).__name__}: {exc}"))
                bar.advance("parse", 1)
                continue
            finally:
                report.seconds["parse"] += time.perf_counter() - t0
            bar.advance("parse", 1)
            seen.update(d.uri for d in docs)
            fresh = self._changed(docs, report)
            bar.add_total(len(fresh))
            for doc in fresh:
                pending.append(doc)
                chars += sum(len(e.text) for e in doc.elements)
                if len(pending) >= size or chars >= max_chars:
                    yield pending
                    pending, chars = [], 0
        if pending:
            yield pending

    def _changed(self, docs: list, report: IngestReport) -> list:
        from kbgraph.models import stable_id

        ids = {stable_id("doc", d.uri): d for d in docs}
        state = {}
        keys = list(ids)
        for start in range(0, len(keys), 5000):
            for row in self.store.run("ingest/document_state", {"ids": keys[start : start + 5000]}):
                state[row["id"]] = row
        fresh = []
        for doc_id, doc in ids.items():
            old = state.get(doc_id)
            if old and old.get("sha256") == doc.sha256 and old.get("status") == "complete":
                report.unchanged += 1
                continue
            if old is not None:
                self._existing.add(doc_id)
            fresh.append(doc)
        return fresh

    # --- one group through chunk, distill, embed, write ------------------------------------------
    def _process(self, docs: list, report: IngestReport, bar) -> None:
        try:
            graphs = self._build(docs, report, bar)
            self._write(graphs, docs, report, bar)
        except _FATAL:
            raise  # the installation, configuration or store is broken: no document would succeed
        except Exception as exc:
            if len(docs) == 1:
                report.errors.append(FileError(path=_source(docs[0]), error=_one_line(exc)))
                return
            log.warning("group of %d documents failed (%s); retrying one by one", len(docs), exc)
            for doc in docs:  # isolate the failing document
                self._process([doc], report, bar)

    def _build(self, docs: list, report: IngestReport, bar) -> list[DocumentGraph]:
        from kbgraph.ingest.chunk import build_structure
        from kbgraph.ingest.distill import distill

        t0 = time.perf_counter()
        graphs: list[DocumentGraph] = []
        for doc in docs:
            document, sections, chunks = build_structure(
                doc, chunk_tokens=self.settings.chunk_tokens, overlap_sentences=self.settings.chunk_overlap_sentences,
                llm=self.llm, llm_split=self.settings.llm_chunking,
                llm_window_tokens=self.settings.llm_chunk_window_tokens,
            )  # with an LLM: recurrent split (PIKE-RAG §5.2.1) and table summaries
            document.ingested_at = _now()
            graphs.append(DocumentGraph(document=document, sections=sections, chunks=chunks))
        report.seconds["chunk"] += time.perf_counter() - t0

        t0 = time.perf_counter()
        all_chunks = [c for g in graphs for c in g.chunks]
        # passage corpora: every passage title is an entity, and chunks naming another title link to it
        titles = self._titles if self._titles and self._passages(docs) else None
        questions, entities, triples, mentions = distill(all_chunks, llm=self.llm, titles=titles)
        _split(graphs, questions, entities, triples, mentions)
        report.seconds["distill"] += time.perf_counter() - t0

        t0 = time.perf_counter()
        self._embed(graphs)
        report.seconds["embed"] += time.perf_counter() - t0
        return graphs

    @staticmethod
    def _passages(docs: list) -> bool:
        """Does the group hold passages of a corpus (titled, one per document)?"""
        return any("#" in d.uri for d in docs)

    def _embed(self, graphs: list[DocumentGraph]) -> None:
        """Embed every layer: Document title, Section path, Chunk (title + text), atomic questions, triples,
        entity names. One embedder call per layer for the whole group."""
        layers: list[tuple[list, list[str]]] = []
        docs = [g.document for g in graphs]
        layers.append((docs, [d.title for d in docs]))
        secs = [s for g in graphs for s in g.sections]
        layers.append((secs, [f"{g.document.title} > {s.path}" for g in graphs for s in g.sections]))
        chunks, ctexts = [], []
        for g in graphs:
            for c in g.chunks:
                chunks.append(c)
                body = f"{c.summary}\n{c.text}" if c.kind == "table" and c.summary else c.text
                head = g.document.title if not c.section_path else f"{g.document.title} > {c.section_path}"
                ctexts.append(f"{head}\n{body}")
        layers.append((chunks, ctexts))
        qs = [q for g in graphs for q in g.questions]
        layers.append((qs, [q.text for q in qs]))
        ts = [t for g in graphs for t in g.triples]
        layers.append((ts, [t.text for t in ts]))
        ents: dict[str, Any] = {}
        for g in graphs:
            for e in g.entities:
                ents.setdefault(e.id, e)
        layers.append((list(ents.values()), [e.name for e in ents.values()]))
        for records, texts in layers:
            if not records:
                continue
            vectors = self.embedder.embed(texts)
            for rec, vec in zip(records, vectors, strict=True):
                rec.embedding = vec.tolist()
        for g in graphs:  # entities shared between documents of the group carry the same vector
            for e in g.entities:
                e.embedding = ents[e.id].embedding

    def _write(self, graphs: list[DocumentGraph], docs: list, report: IngestReport, bar) -> None:
        from kbgraph.ingest.write import write_documents

        t0 = time.perf_counter()
        replace = {g.document.id for g in graphs} & self._existing
        write_documents(self.store, graphs, replace_ids=replace)
        report.seconds["write"] += time.perf_counter() - t0
        report.updated += len(replace)
        report.added += len(graphs) - len(replace)
        report.documents += len(graphs)
        report.chunks += sum(len(g.chunks) for g in graphs)
        bar.advance("documents", len(graphs))

    # --- prune ----------------------------------------------------------------------------------
    def _prune(self, files: list[Path], seen_uris: set[str]) -> int:
        """Delete documents whose source file is gone, and passages gone from a corpus ingested now."""
        ingested_files = {f.resolve().as_uri() for f in files}
        deleted = 0
        for row in self.store.run("ingest/list_documents"):
            uri = row["uri"] or ""
            if not uri.startswith("file://"):
                continue
            file_uri, _, fragment = uri.partition("#")
            path = Path(_uri_to_path(file_uri))
            gone = not path.exists() or (fragment and file_uri in ingested_files and uri not in seen_uris)
            if gone:
                self.store.delete_document(row["id"])
                deleted += 1
        return deleted

    # --- progress -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _progress(self):
        if not self.progress:
            yield _LogProgress()
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(
            TextColumn("{task.description:>10}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            transient=False,
        ) as progress:  # fmt: skip
            yield _RichProgress(progress)


class _LogProgress:
    def __init__(self) -> None:
        self.done = 0
        self.total = 0
        self._last = time.monotonic()

    def advance(self, what: str, n: int) -> None:
        if what == "documents":
            self.done += n
            if time.monotonic() - self._last > 10 or self.done == self.total:
                log.info("ingested %d/%d documents", self.done, self.total)
                self._last = time.monotonic()

    def add_total(self, n: int) -> None:
        self.total += n


class _RichProgress:
    def __init__(self, progress) -> None:
        self.progress = progress
        self.files = progress.add_task("files", total=None)
        self.docs = progress.add_task("documents", total=0)

    def advance(self, what: str, n: int) -> None:
        self.progress.advance(self.files if what == "parse" else self.docs, n)

    def add_total(self, n: int) -> None:
        task = self.progress.tasks[self.docs]
        self.progress.update(self.docs, total=(task.total or 0) + n)


def _split(graphs: list[DocumentGraph], questions, entities, triples, mentions) -> None:
    """Distribute distilled records to their documents (by chunk); an entity goes to every document that
    mentions it or links it by a triple."""
    owner = {c.id: g for g in graphs for c in g.chunks}
    by_id = {e.id: e for e in entities}
    needed: dict[int, dict[str, Any]] = defaultdict(dict)
    for q in questions:
        owner[q.chunk_id].questions.append(q)
    for t in triples:
        g = owner[t.chunk_id]
        g.triples.append(t)
        for eid in (t.subject_id, t.object_id):
            if eid in by_id:
                needed[id(g)][eid] = by_id[eid]
    for m in mentions:
        g = owner[m.chunk_id]
        g.mentions.append(m)
        if m.entity_id in by_id:
            needed[id(g)][m.entity_id] = by_id[m.entity_id]
    for g in graphs:
        g.entities = [e.model_copy() for e in needed[id(g)].values()]


def _source(doc) -> str:
    return _uri_to_path(doc.uri)


def _uri_to_path(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    if uri.startswith("file://"):
        parsed = urlparse(uri)
        return unquote(parsed.path) + (f"#{parsed.fragment}" if parsed.fragment else "")
    return uri


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    msg = text[0] if text else type(exc).__name__
    return msg if isinstance(exc, IngestError) else f"{type(exc).__name__}: {msg}"


def ingest(store: GraphStore, settings: Settings, paths: Sequence[str | Path], **kwargs: Any) -> IngestReport:
    """Convenience: ``Ingestor(store, settings).run(paths, prune=..., wait=...)``."""
    llm = kwargs.pop("llm", None)
    progress = kwargs.pop("progress", None)
    return Ingestor(store, settings, llm=llm, progress=progress).run(paths, **kwargs)

