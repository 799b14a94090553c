"""The run's side of the ``ray`` ingestion engine (setting ``ingest_engine=ray``; a row of kbgraph.ingest.engines):
files checked here as by the local engine (unchanged ones skipped, passage corpora read), the rest parsed, chunked,
distilled and embedded on Ray (``kbgraph.ingest.ray_engine.RayCompute``), and the batches that come back written
here, in order, in the local engine's groups (``GroupCut``), by the run's ``GroupRunner`` (the same write path,
unit of work and retries)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from kbgraph.ingest.groups import Built, distilled_line, document_chars
from kbgraph.ingest.progress import Stage
from kbgraph.ingest.ray_engine import Batch, check_address, import_ray, RayCompute, Work
from kbgraph.ingest.report import FileError
from kbgraph.ingest.sources import uri_to_path
from kbgraph.models import DocumentGraph
from kbgraph.settings import Settings

if TYPE_CHECKING:
    from kbgraph.ingest.engines import EngineRun
    from kbgraph.ingest.metadata import Origin
    from kbgraph.ingest.parse import ParsedDocument

__all__ = ["RayEngine"]


class RayEngine:
    """Setting ``ingest_engine=ray``: the compute on a Ray cluster (``ray_address``; none = a local Ray started for
    the run with ``ingest_workers`` CPUs), the checks and writes in this process."""

    summary = "a Ray cluster (writes stay in this process)"

    def check(self, settings: Settings) -> None:
        """ConfigError when Ray Data is not installed (naming the extra) or no cluster answers at ``ray_address``."""
        import_ray()
        check_address(settings.ingest.ray_address)

    def run(self, files: list[Path], run: EngineRun) -> None:
        """Read ``files`` here (``parse_files=False``: only passage corpora are parsed in this process); compute
        the rest on Ray and write what comes back in the local engine's groups. Ray is not started when nothing is
        new."""
        run.reader.start(files)
        remote: list[Path] = []
        passages: list[ParsedDocument] = []
        for path in files:
            docs = run.reader.read(path, parse_files=False)
            if docs is None:
                remote.append(path)
            else:
                passages += docs
        if not remote and not passages:
            return  # nothing new: Ray is not started
        origins = {p: run.reader.origin(p) for p in remote}
        compute = RayCompute(run.settings, llm=run.llm, titles=run.state.titles)
        _RayGroups(run).write(compute, remote, passages, origins)


class _RayGroups:
    """The batches of one run's Ray pipeline turned into the local engine's groups: ``pending`` is the open group
    (documents with their records computed), written when ``GroupCut`` closes it."""

    def __init__(self, run: EngineRun):
        self.run = run
        self.pending: list[tuple[ParsedDocument, DocumentGraph]] = []

    def write(
        self, compute: RayCompute, remote: list[Path], passages: list[ParsedDocument], origins: dict[Path, Origin]
    ) -> None:
        """Compute ``remote`` files and ``passages`` on Ray and write every batch in turn."""
        run = self.run
        batches = compute.batches(remote, passages, origins)
        what = f"{len(remote):,} files and {len(passages):,} passages on Ray"
        try:
            while True:
                with run.bar.stage("compute", what, group=run.state.group + 1, quiet=True):  # heartbeats name the wait
                    batch = next(batches, None)
                if batch is None:
                    break
                self.add(batch)
            self.close()
        finally:
            batches.close()  # shuts down the local Ray it started

    def add(self, batch: Batch) -> None:
        """Account for one batch computed on Ray (files read, documents failed); add the rest to the open group,
        written when the local engine's rule closes it (``GroupCut``): both engines write the same groups."""
        report = self.run.state.report
        for stage in ("parse", "chunk", "distill", "embed"):
            report.seconds[stage] += batch.seconds.get(stage, 0.0)
        for w in batch.works:
            if w.fatal is not None:
                raise w.fatal  # the installation or configuration is broken: no document would succeed
        docs = chunks = 0
        for w in batch.works:
            graph = self._add_work(w)
            if graph is not None:
                docs, chunks = docs + 1, chunks + len(graph.chunks)
        if docs:
            self._stage_lines(batch, docs, chunks)

    def _add_work(self, w: Work) -> DocumentGraph | None:
        """One document (or failed file) of a batch: reported, skipped when unchanged after all, or added to the
        open group (its records returned)."""
        run, cut = self.run, self.run.state.cut
        report = run.state.report
        key = Path(w.path).resolve().as_uri()
        if not w.parsed:
            report.errors.append(FileError(path=w.path, error=w.error or "not parsed"))
            run.bar.file_read(key, fresh=0, failed=True)
            return None
        doc = w.doc
        assert doc is not None  # a parsed file's document (ray_engine.parse_chunk)
        if "#" not in doc.uri and not run.reader.fresh(key, [doc]):
            return None  # a file whose document is unchanged after all (same content, other bytes)
        n = document_chars(doc)
        if cut.before(n):
            self.close()
        full = cut.add(n)  # a failed document counts, as in the local engine's groups
        graph: DocumentGraph | None = None
        if w.error is not None:
            report.errors.append(FileError(path=uri_to_path(doc.uri), error=w.error))
            run.bar.document_failed(doc.uri)
        else:
            assert w.graph is not None  # chunked, and no stage failed
            self.pending.append((doc, w.graph))
            graph = w.graph
        if full:
            self.close()
        return graph

    def _stage_lines(self, batch: Batch, docs: int, chunks: int) -> None:
        """The progress lines of the workers' stages of ``batch`` (``docs`` documents, ``chunks`` chunks added)."""
        run = self.run
        group, counts = run.state.group + 1, distilled_line(batch.questions, batch.triples, batch.entities)
        for name, n, unit, detail in (
            ("chunk", docs, "documents", f"{chunks:,} chunks"),
            ("distill", chunks, "chunks", counts),
            ("embed", batch.texts, "texts", ""),
        ):
            st = Stage(name, group, "")
            st.started = time.monotonic() - batch.seconds.get(name, 0.0)  # the line gives the workers' time
            st.done(n, unit, detail)
            run.bar.stage_done(st)

    def close(self) -> None:
        """Write the open group (if it holds a document to write) and start the next."""
        run = self.run
        if self.pending:
            group = run.state.close_group(len(self.pending), run.bar)
            run.runner.write_in_turn(Built([d for d, _ in self.pending], [g for _, g in self.pending], group))
        else:
            run.state.cut.reset()
        self.pending = []
