"""What one ingestion run keeps while it runs (``RunState``), the one object its parts share: the run
(``kbgraph.ingest.pipeline.Ingestor``) makes it, the reader of the files (``kbgraph.ingest.reader``), the engine
(``kbgraph.ingest.engines``) and the writer of the groups (``kbgraph.ingest.groups.GroupRunner``) read and fill it.
Nothing else of the run is shared between them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kbgraph.ingest.groups import GroupCut
from kbgraph.ingest.progress import Progress
from kbgraph.ingest.report import FileOutcome, IngestReport, WrittenCounts
from kbgraph.models import MetadataValue

__all__ = ["RunState"]


@dataclass
class RunState:
    """The state of one ingestion run.

    Attributes:
        report: the run's report, filled as the run goes (counts, errors, seconds).
        cut: where the open group closes (settings ``ingest_group_size``, ``ingest_group_chars``): one rule for
            every engine, so that all write the same units of work in the same order.
        meta: the run's ``--meta`` keys (``kbgraph.ingest.metadata``), checked before the run starts.
        titles: {document id: title} of every passage corpus read in this run (filled before any group is distilled;
            read by distill's title links).
        existing: ids of the changed documents already in the graph (replaced when written).
        written: {source file URI's path: what was written of it} (``report.files``; filled by the GroupRunner).
        seen: URIs of the documents found in this run, unchanged ones included (``prune`` deletes the others).
        corpora: {passage corpus file URI: passages} parsed in this run (recorded as SourceFile at the end).
        skipped: files the run skipped (found by ``discover``, or claimed by another run).
        relative: {resolved file: its path relative to the path given} (``discover``; a document's ``path``).
        parsed: files handed to a parser in this run (an unchanged file is hashed, not parsed).
        group: the number of the last group closed (1-based; 0 before the first).
    """

    report: IngestReport
    cut: GroupCut
    meta: dict[str, MetadataValue] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    existing: set[str] = field(default_factory=set)
    written: dict[str, WrittenCounts] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    corpora: dict[str, int] = field(default_factory=dict)
    skipped: list[FileOutcome] = field(default_factory=list)
    relative: dict[Path, str] = field(default_factory=dict)
    parsed: int = 0
    group: int = 0

    def close_group(self, documents: int, bar: Progress) -> int:
        """Close the open group of ``documents`` documents: its number (the next one), told to ``bar``; the cut
        starts the next group."""
        self.group += 1
        bar.group_ready(self.group, documents, self.cut.chars)
        self.cut.reset()
        return self.group
