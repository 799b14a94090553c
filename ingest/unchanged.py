"""Recognise unchanged sources before parsing them (kbgraph.ingest.pipeline): a cron re-run over an unchanged
folder costs reading and hashing the bytes, not parsing them.

* A file (PDF, DOCX, ...): its document id comes from its URI and its Document stores the sha256 of the
  file's raw bytes, so one ``ingest/document_state`` lookup for all files of the run and a hash of each file
  tell whether it is unchanged (same sha256, status 'complete'); no parser runs for it.
* A passage corpus (.jsonl, many documents): the file-level record is a ``(:SourceFile {id: <file URI>,
  sha256, passages, recorded_at})`` node, written when a run has ingested every passage of the corpus without
  error (``record``) and removed before a run writes any passage of a changed corpus (``forget``), so a run
  that dies half-way leaves no record. The corpus is skipped when its raw bytes hash to the recorded sha256
  and the graph holds exactly ``passages`` documents under ``<file URI>#``, all complete: a passage deleted
  (``kbgraph delete``) or left unfinished makes the next run parse the corpus again; so do passages that
  vanished from the file while ``--prune`` was not given (they are still in the graph).

A source unchanged but for its metadata (a sidecar edited, another ``--meta``; issue 58) is still not parsed: the
check returns the metadata-only updates (``kbgraph.ingest.refresh``); a corpus whose outside metadata changed is
read again, its passages' texts not embedded again unless they changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kbgraph.models import stable_id
from kbgraph.store import GraphStore
from kbgraph.store.params import Row
from kbgraph.errors import IngestError
from kbgraph.ingest.metadata import Origin
from kbgraph.ingest.parse import JSONL_EXTENSIONS, parse_passages_jsonl
from kbgraph.ingest.refresh import file_update, outside_sha256
from kbgraph.ingest.sources import uri_to_path


def prune_documents(store: GraphStore, files: list[Path], seen_uris: set[str], check: Callable[[], None]) -> int:
    """``--prune``: delete the documents whose source file is gone, and the passages gone from a corpus among
    ``files`` (those not in ``seen_uris``); ``check`` (the run's lock) runs before each delete. Returns how many
    were deleted."""
    ingested_files = {f.resolve().as_uri() for f in files}
    deleted = 0
    for row in store.run("ingest/list_documents"):
        uri = row["uri"] or ""
        if not uri.startswith("file://"):
            continue
        file_uri, _, fragment = uri.partition("#")
        path = Path(uri_to_path(file_uri))
        gone = not path.exists() or (fragment and file_uri in ingested_files and uri not in seen_uris)
        if gone:
            check()
            store.delete_document(row["id"])
            deleted += 1
    return deleted


def is_corpus(path: Path) -> bool:
    """Is ``path`` a passage corpus (JSON Lines, .jsonl or .ndjson: one document per line)?"""
    return path.suffix.lower() in JSONL_EXTENSIONS


def file_sha256(path: Path) -> str:
    """Hex sha256 of the file's raw bytes (read in blocks). Raises OSError."""
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


@dataclass
class Unchanged:
    """A source found unchanged: ``uris`` of its documents (seen, for ``--prune``), ``titles`` {document id:
    title} of a passage corpus (linked from other corpora read in the same run), ``documents`` counted,
    ``updates`` the ``ingest/update_metadata`` rows of its metadata changed (kbgraph.ingest.refresh)."""

    uris: list[str]
    titles: dict[str, str] = field(default_factory=dict)
    updates: list[Row] = field(default_factory=list)

    @property
    def documents(self) -> int:
        return len(self.uris)


class SourceCheck:
    """The unchanged-before-parse check of one run over ``store``. ``max_bytes``: files larger than this are
    left to the parser (which refuses them). ``origin``: where a file comes from in the run (its relative path,
    the run's ``--meta``; kbgraph.ingest.metadata). ``corpus_sha`` holds the sha256 of every corpus hashed, taken
    before it is parsed, and ``corpus_outside`` the sha256 of its outside metadata (what ``record`` stores)."""

    def __init__(self, store: GraphStore, max_bytes: int, origin: Callable[[Path], Origin] | None = None):
        self.store = store
        self.max_bytes = max_bytes
        self.origin = origin or (lambda p: Origin(path=p.name))
        self.corpus_sha: dict[str, str] = {}
        self.corpus_outside: dict[str, str] = {}
        self._state: dict[str, Row] = {}

    def prefetch(self, files: list[Path]) -> None:
        """Look up the stored sha256 and status of every file's document (one statement per 5,000 files)."""
        ids = [stable_id("doc", p.resolve().as_uri()) for p in files if not is_corpus(p)]
        for start in range(0, len(ids), 5000):
            for row in self.store.run("ingest/document_state", {"ids": ids[start : start + 5000]}):
                self._state[row["id"]] = row

    def check(self, path: Path) -> Unchanged | None:
        """``Unchanged`` when ``path`` needs no parsing, else None (new, changed, incomplete, unreadable: the
        parser decides and reports)."""
        try:
            size = path.stat().st_size
            if size == 0:
                return None
            uri = path.resolve().as_uri()
            if is_corpus(path):
                return self._check_corpus(path, uri)
            if size > self.max_bytes:
                return None
            old = self._state.get(stable_id("doc", uri))
            if not old or old.get("status") != "complete" or not old.get("sha256"):
                return None
            if file_sha256(path) != old["sha256"]:
                return None
            updates = file_update(path, self.origin(path), old)
            return None if updates is None else Unchanged(uris=[uri], updates=updates)
        except OSError:
            return None

    def _check_corpus(self, path: Path, uri: str) -> Unchanged | None:
        self.corpus_sha[uri] = sha = file_sha256(path)
        try:
            self.corpus_outside[uri] = outside = outside_sha256(path, self.origin(path))
        except IngestError:
            return None  # a bad sidecar: the corpus's read reports it
        rows = self.store.run("ingest/source_file", {"id": uri})
        if rows and rows[0]["sha256"] != sha:
            self.forget(uri)  # its changed passages are about to be written
        if rows and rows[0].get("metadata_sha256") != outside:
            return None  # read again: its passages' metadata changed (kbgraph.ingest.refresh)
        return self._same_corpus(uri, sha, rows)

    def _same_corpus(self, uri: str, sha: str, rows: list[Row]) -> Unchanged | None:
        """``Unchanged`` when corpus ``uri`` is recorded (``rows``: its ingest/source_file record) with the
        sha256 ``sha`` and every passage of it is complete, else None."""
        if not rows or rows[0]["sha256"] != sha:
            return None
        row = self.store.run("ingest/corpus_documents", {"prefix": f"{uri}#"})[0]
        if not (int(row["documents"]) == int(row["complete"]) == int(rows[0]["passages"] or -1)):
            return None
        return Unchanged(uris=list(row["uris"]), titles={doc_id: title for doc_id, title in row["titles"]})

    def run_titles(self, files: list[Path]) -> dict[str, str]:
        """{document id: title} of the passages of every passage corpus among ``files`` when there are several,
        read before any group is distilled, so that a passage names a title of any corpus of the run whatever
        the order the files are read in and however writers share them (ingest_writers=claims): from the graph
        for a corpus unchanged by the rule ``check`` applies (not parsed), else from the file. {} for one corpus (its own read gives
        them all at once); a file that cannot be read gives none (the run's own read reports it)."""
        corpora = [p for p in files if is_corpus(p)]
        titles: dict[str, str] = {}
        for path in corpora if len(corpora) > 1 else ():
            uri = path.resolve().as_uri()
            try:
                same = self._same_corpus(uri, file_sha256(path), self.store.run("ingest/source_file", {"id": uri}))
                titles.update(
                    same.titles
                    if same is not None
                    else {stable_id("doc", d.uri): d.title for d in parse_passages_jsonl(path)}
                )
            except (OSError, IngestError):
                continue
        return titles

    def forget(self, uri: str) -> None:
        """Remove a corpus's record (before any of its passages is rewritten)."""
        self.store.run("ingest/forget_source_file", {"id": uri})

    def record(self, uri: str, passages: int, recorded_at: str) -> None:
        """Record corpus ``uri`` as fully ingested with the sha256 taken before it was parsed."""
        sha = self.corpus_sha.get(uri)
        if sha:
            self.store.run(
                "ingest/record_source_file",
                {
                    "id": uri,
                    "sha256": sha,
                    "passages": passages,
                    "recorded_at": recorded_at,
                    "metadata_sha256": self.corpus_outside.get(uri),
                },
            )
