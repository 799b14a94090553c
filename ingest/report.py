"""What an ingestion run reports (kbgraph.ingest.pipeline; stored on its ``(:IngestionRun)`` node).

``IngestReport`` sums up one run: counts of documents added, updated, unchanged, deleted, failed and skipped,
seconds per stage (``STAGES``), the errors (``FileError``) and one ``FileOutcome`` per file found
(``file_outcomes``). ``error_line`` is how an exception is written into the report.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Literal, NotRequired, TypedDict

from pydantic import BaseModel, Field

from kbgraph.errors import IngestError
from kbgraph.ingest.autotag import TaggingReport
from kbgraph.text import one_line

STAGES = ("parse", "chunk", "distill", "embed", "write", "tag")
#: Longest error line recorded against a document.
ERROR_CHARS = 1000


class FileError(BaseModel):
    """An error of the run: the file (or ``file#passage``, or directory) and one line saying what failed."""

    path: str
    error: str


class FileOutcome(BaseModel):
    """What became of one file found: ``ingested`` (new documents written), ``updated`` (changed documents
    rewritten), ``unchanged`` (same sha256, nothing written), ``failed`` (``reason``: why), ``skipped`` (not a
    kind of file kbgraph reads; ``reason``: why and the fix; or "claimed by <host> (pid N)": another run writing
    the same knowledge base at once writes it, ``kbgraph.ingest.claims``). ``documents``/``chunks``: written in this run
    (ingested/updated). ``warnings``: elements skipped inside the file (a table, an attachment), as parsed in
    this run."""

    path: str
    outcome: Literal["ingested", "updated", "unchanged", "failed", "skipped"]
    reason: str | None = None
    documents: int | None = None
    chunks: int | None = None
    warnings: list[str] = Field(default_factory=list)


class IngestReport(BaseModel):
    """Summary of one run (also stored on its IngestionRun node). ``seconds``: wall time per stage (``tag``:
    auto-tagging, run once after the groups are written)."""

    run_id: str
    started_at: str
    finished_at: str | None = None
    status: str = "running"
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    #: unchanged documents whose metadata alone changed and was updated in place (issue 58; kbgraph.ingest.refresh)
    metadata_updated: int = 0
    deleted: int = 0
    failed: int = 0
    skipped: int = 0
    documents: int = 0
    chunks: int = 0
    errors: list[FileError] = Field(default_factory=list)
    #: every file found, in path order, with its outcome (filled when the run ends)
    files: list[FileOutcome] = Field(default_factory=list)
    seconds: dict[str, float] = Field(default_factory=lambda: dict.fromkeys((*STAGES, "total"), 0.0))
    #: the ``tag`` stage (auto-tagging, PIKE-RAG §5.2.2; kbgraph.ingest.autotag) when it ran: chunks tagged,
    #: chunks whose LLM request failed (left untagged, asked again by the next run; they do not fail the run)
    tagging: TaggingReport | None = None

    @property
    def exit_code(self) -> int:
        """0 all ok, 1 some files failed. Skipped files alone (images, archives, unknown types found in a
        directory) do not fail a run: nothing is wrong with them or the run, and each is listed in ``files``
        with the fix; a cron job would otherwise fail forever on a folder that holds a photo."""
        return 1 if self.failed else 0


class WrittenCounts(TypedDict):
    """What a run wrote of one source file (``file_outcomes``' ``written``; kbgraph.ingest.groups fills it):
    its documents added and updated, their chunks and their parse warnings."""

    added: int
    updated: int
    chunks: int
    warnings: NotRequired[list[str]]


class _OutcomeCounts(TypedDict, total=False):
    """The counts of a written file's ``FileOutcome``."""

    documents: int | None
    chunks: int | None
    warnings: list[str]


def file_outcomes(
    files: list[Path], skipped: list[FileOutcome], errors: list[FileError], written: dict[str, WrittenCounts]
) -> list[FileOutcome]:
    """One outcome per file found, in path order: ``skipped`` (from ``discover``), ``failed`` when an error
    names the file or one of its passages (``path#id``), ``ingested``/``updated`` when ``written`` (by
    source path: ``{"added", "updated", "chunks", "warnings"}``) has it, else ``unchanged``. Errors naming
    no file found (a missing path, a symlink loop) are ``failed`` outcomes of their own."""
    by_file: dict[str, list[str]] = defaultdict(list)
    known = {str(f) for f in files}
    for e in errors:
        key = e.path if e.path in known else e.path.rsplit("#", 1)[0]
        by_file[key if key in known else e.path].append(e.error)
    out: dict[str, FileOutcome] = {o.path: o for o in skipped}
    for f in files:
        key = str(f)
        if key in out:  # skipped after it was found (claimed by another run: kbgraph.ingest.claims)
            continue
        w = written.get(key)
        docs = (w["added"] + w["updated"]) if w else None
        counts: _OutcomeCounts = {"documents": docs, "chunks": w["chunks"], "warnings": w["warnings"]} if w else {}
        if by_file.get(key):
            errs = by_file.pop(key)
            more = f" (+{len(errs) - 1} more)" if len(errs) > 1 else ""
            out[key] = FileOutcome(path=key, outcome="failed", reason=errs[0] + more, **counts)
        elif w:
            out[key] = FileOutcome(path=key, outcome="ingested" if w["added"] else "updated", **counts)
        else:
            out[key] = FileOutcome(path=key, outcome="unchanged")
    for path, errs in by_file.items():
        out.setdefault(path, FileOutcome(path=path, outcome="failed", reason="; ".join(errs)))
    return [out[k] for k in sorted(out)]


def error_line(exc: BaseException) -> str:
    """One line for a document that failed with ``exc``: the first line of its message (whitespace collapsed,
    at most ``ERROR_CHARS``), prefixed with the exception type unless it is an ``IngestError`` (whose
    message already says what is wrong with the file); the type alone when the message is empty."""
    lines = str(exc).strip().splitlines()
    msg = one_line(lines[0], ERROR_CHARS, empty=type(exc).__name__) if lines else type(exc).__name__
    return msg if isinstance(exc, IngestError) else f"{type(exc).__name__}: {msg}"


__all__ = [
    "ERROR_CHARS",
    "STAGES",
    "FileError",
    "FileOutcome",
    "IngestReport",
    "WrittenCounts",
    "error_line",
    "file_outcomes",
]
