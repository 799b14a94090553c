"""Reading the files of an ingestion run, whatever its engine: which documents of a file are new or changed
(``SourceReader.read``). A file is claimed first when runs share the files (setting ``ingest_writers=claims``,
``kbgraph.ingest.claims``); an unchanged file is recognised from the hash of its raw bytes and not parsed
(``kbgraph.ingest.unchanged``); a parsed file's documents are compared with the graph (``kbgraph.ingest.refresh``:
unchanged, metadata-only updates written in place, or fresh). The engine (``kbgraph.ingest.engines``) asks for the
files in order and computes the fresh documents; what the reader learns goes into the run's ``RunState``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from kbgraph.errors import IngestError
from kbgraph.ingest.claims import ClaimLock
from kbgraph.ingest.compute import parse_source
from kbgraph.ingest.metadata import Origin
from kbgraph.ingest.progress import Progress
from kbgraph.ingest.refresh import classify, write_updates
from kbgraph.ingest.report import FileError, FileOutcome
from kbgraph.ingest.run_state import RunState
from kbgraph.ingest.sources import uri_to_path
from kbgraph.ingest.unchanged import is_corpus, SourceCheck
from kbgraph.models import stable_id
from kbgraph.settings import Settings
from kbgraph.store import GraphStore
from kbgraph.text import utc_now

if TYPE_CHECKING:
    from kbgraph.ingest.lock import IngestLock
    from kbgraph.ingest.parse import ParsedDocument

__all__ = ["SourceReader"]


class SourceReader:
    """Reads the files of one run into ``state`` (``store``: the knowledge base; ``lock``: the run's lock, checked
    before each write; ``bar``: the run's progress). ``start(files)`` runs once, before the first ``read``."""

    def __init__(self, store: GraphStore, settings: Settings, state: RunState, bar: Progress, lock: IngestLock):
        self.store, self.settings, self.state, self.bar, self.lock = store, settings, state, bar, lock
        #: the lock when it is per-file claims (kbgraph.ingest.claims): each file claimed before it is read
        self.claims = lock if isinstance(lock, ClaimLock) else None
        self._check: SourceCheck | None = None

    @property
    def source_check(self) -> SourceCheck:
        """The run's check of unchanged sources (``start``: before the first file is read)."""
        if self._check is None:
            raise RuntimeError("no source check: start() runs before the first file is read")
        return self._check

    def origin(self, path: Path) -> Origin:
        """Where ``path`` comes from in this run: its path relative to the path given, the run's ``--meta``."""
        return Origin(path=self.state.relative.get(path.resolve(), path.name), meta=self.state.meta)

    def start(self, files: list[Path]) -> None:
        """Prefetch the state of ``files`` in the graph and read the titles of every passage corpus among them
        (before any group is distilled: title links do not depend on the order of the files)."""
        self._check = SourceCheck(self.store, self.settings.ingest.max_file_bytes, origin=self.origin)
        self._check.prefetch(files)
        self.state.titles.update(self._check.run_titles(files))

    def read(self, path: Path, *, parse_files: bool = True) -> list[ParsedDocument] | None:
        """The new or changed documents of ``path`` ([] when it is unchanged, hashed but not parsed, or failed
        to parse: reported). ``parse_files=False`` (an engine that parses elsewhere): a file that is not a passage
        corpus and not unchanged is not parsed here; None says so. With per-file claims (setting
        ingest_writers=claims) the file is claimed first: one a live other run claimed is reported skipped ("claimed
        by <host> (pid N)"), and a claim is given back at once when nothing of the file is to be written."""
        key = path.resolve().as_uri()
        if self.claims is not None:
            holder = self.claims.take(key)
            if holder is not None:  # a live other run writes it
                self.state.skipped.append(FileOutcome(path=str(path), outcome="skipped", reason=f"claimed by {holder}"))
                self.bar.file_read(key, fresh=0)
                return []
            self.source_check.prefetch([path])  # its state now, not at the start: another run may have written it
        got = self._read_claimed(path, key, parse_files=parse_files)
        if not got and got is not None and self.claims is not None:
            self.claims.release([key])  # unchanged or failed: nothing of it to write
        return got

    def _read_claimed(self, path: Path, key: str, *, parse_files: bool) -> list[ParsedDocument] | None:
        report, state = self.state.report, self.state
        t0 = time.perf_counter()
        try:
            with self.bar.stage("parse", path.name, quiet=True):
                same = self.source_check.check(path)
                if same is None:
                    state.parsed += 1
                    if not parse_files and not is_corpus(path):
                        return None
                    docs = parse_source(path, self.settings, self.origin(path))
                    if is_corpus(path):
                        state.titles.update((stable_id("doc", d.uri), d.title) for d in docs)
                        state.corpora[key] = len(docs)
        except IngestError as exc:
            return self._failed(path, key, str(exc))
        except Exception as exc:  # a parser bug must not stop the run
            return self._failed(path, key, f"{type(exc).__name__}: {exc}")
        finally:
            report.seconds["parse"] += time.perf_counter() - t0
        if same is not None:  # unchanged: not parsed (its metadata updated in place when only it changed)
            self.update_metadata(same.updates)
            report.unchanged += same.documents
            state.seen.update(same.uris)
            state.titles.update(same.titles)
            self.bar.file_read(key, fresh=0, unchanged=same.documents)
            return []
        return self.fresh(key, docs)

    def _failed(self, path: Path, key: str, error: str) -> list[ParsedDocument]:
        self.state.report.errors.append(FileError(path=str(path), error=error))
        self.bar.file_read(key, fresh=0, failed=True)
        return []

    def fresh(self, key: str, docs: list[ParsedDocument]) -> list[ParsedDocument]:
        """The documents of ``docs`` (parsed from the file ``key``) to write: new, changed or incomplete."""
        state = self.state
        state.seen.update(d.uri for d in docs)
        got = classify(self.store, docs)
        state.existing.update(got.existing)
        self.update_metadata(got.updates)
        state.report.unchanged += got.unchanged
        self.bar.file_read(key, fresh=len(got.fresh), unchanged=got.unchanged)
        return got.fresh

    def update_metadata(self, rows: list[dict[str, object]]) -> None:
        """Write the metadata-only updates ``rows`` of unchanged documents (kbgraph.ingest.refresh)."""
        if rows:
            self.lock.check()
            self.state.report.metadata_updated += write_updates(self.store, rows)

    def record_corpora(self) -> None:
        """Record every passage corpus parsed in this run none of whose passages failed (SourceFile)."""
        failed = {e.path.split("#", 1)[0] for e in self.state.report.errors}
        self.lock.check()
        for uri, passages in self.state.corpora.items():
            if uri_to_path(uri) not in failed:
                self.source_check.record(uri, passages, utc_now())
