"""The one list of ingestion engines: ``ENGINES``, name -> engine, read by the run (kbgraph.ingest.pipeline
``Ingestor``), which asks ``get_engine(settings.ingest.ingest_engine)`` and never tests the name. An engine decides
where the per-document compute of a run (parse, chunk, distill, embed: kbgraph.ingest.compute) runs; everything
that needs the knowledge base stays with the run, whatever the engine: the lock, the check of unchanged files
(``SourceReader``), the writes in units of work (``GroupRunner``), the report and the progress.

* ``local`` (:class:`LocalEngine`, here): this process reads the files in order and forms the groups; the
  ``GroupRunner`` chunks, distills, embeds and writes each (spaCy's worker processes on large groups; group k
  written while group k+1 is embedded, setting ``ingest_overlap_writes``).
* ``ray`` (:class:`kbgraph.ingest.ray_run.RayEngine`): the files this process does not skip are parsed, chunked,
  distilled and embedded on a Ray cluster (kbgraph.ingest.ray_engine) and written here in the local engine's
  groups.

Adding an engine = one class satisfying :class:`IngestEngine` (its module in ingest/) + one row in ``_ROWS`` (+ its
name in the ``Literal`` of the setting ``ingest_engine``, kbgraph.settings_groups ``IngestSettings``, which
tests/unit/test_ingest_engines.py holds to this list: the settings sit below this package in the import layers of
pyproject.toml and cannot read the registry). Both engines must build the same graph (tests/test_ingest_ray.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kbgraph.errors import ConfigError
from kbgraph.ingest.groups import document_chars, GroupRunner
from kbgraph.ingest.progress import Progress
from kbgraph.ingest.ray_run import RayEngine
from kbgraph.ingest.reader import SourceReader
from kbgraph.ingest.run_state import RunState
from kbgraph.llm.base import LLM
from kbgraph.settings import Settings

if TYPE_CHECKING:
    from kbgraph.ingest.parse import ParsedDocument

__all__ = ["DEFAULT_ENGINE", "ENGINES", "EngineRun", "IngestEngine", "LocalEngine", "engines_help", "get_engine"]

#: The engine of the setting ``ingest_engine``'s default.
DEFAULT_ENGINE = "local"


@dataclass(frozen=True)
class EngineRun:
    """What an engine is given of one run.

    Attributes:
        settings: the run's settings.
        llm: the run's LLM (None offline).
        state: the run's state (``RunState``: the report, the group cut and numbers, titles read, ...).
        reader: reads the files in order (``SourceReader.read``: the new or changed documents of a file).
        runner: processes and writes the groups (``GroupRunner.run`` from parsed documents, or
            ``GroupRunner.write_in_turn`` of a group computed elsewhere).
        bar: the run's progress.
    """

    settings: Settings
    llm: LLM | None
    state: RunState
    reader: SourceReader
    runner: GroupRunner
    bar: Progress


class IngestEngine(Protocol):
    """An ingestion engine: where the compute of a run's documents runs."""

    #: One line: where the compute runs (the CLI's and the docs' description).
    summary: str

    def check(self, settings: Settings) -> None:
        """Before the run takes its lock and records itself: raise ConfigError when the engine cannot run under
        ``settings`` (a package missing, a cluster that does not answer)."""
        ...

    def run(self, files: list[Path], run: EngineRun) -> None:
        """Ingest ``files`` (found by ``discover``, in order): each read with ``run.reader`` (``start`` first),
        its new or changed documents computed and written through ``run.runner`` in the groups closed by
        ``run.state.cut`` (``run.state.close_group``), in order. Raises a ``kbgraph.ingest.groups.FATAL`` error to
        stop the run; records any other error against its file or document in ``run.state.report``."""
        ...


class LocalEngine:
    """Setting ``ingest_engine=local``: the files read in order and their documents grouped here; each group
    chunked, distilled, embedded and written by the ``GroupRunner`` in this process."""

    summary = "this process (spaCy's worker processes on large groups)"

    def check(self, settings: Settings) -> None:
        """Nothing to check: the local engine needs only what ingestion itself needs."""

    def run(self, files: list[Path], run: EngineRun) -> None:
        run.runner.run(self._groups(files, run))

    def _groups(self, files: list[Path], run: EngineRun) -> Iterator[list[ParsedDocument]]:
        """The new or changed documents of ``files``, read in order, in groups of at most ingest_group_size
        documents that close once they hold ingest_group_chars characters or before a document that would
        take them over it (a huge document is a group of its own and holds back no other file)."""
        cut, state = run.state.cut, run.state
        run.reader.start(files)
        pending: list[ParsedDocument] = []
        for path in files:
            for doc in run.reader.read(path) or ():
                n = document_chars(doc)
                if cut.before(n):
                    state.close_group(len(pending), run.bar)
                    yield pending
                    pending = []
                pending.append(doc)
                if cut.add(n):
                    state.close_group(len(pending), run.bar)
                    yield pending
                    pending = []
        if pending:
            state.close_group(len(pending), run.bar)
            yield pending


_ROWS: tuple[tuple[str, IngestEngine], ...] = (
    ("local", LocalEngine()),
    ("ray", RayEngine()),
)
#: name -> engine: the names are the setting ``ingest_engine``'s.
ENGINES: dict[str, IngestEngine] = dict(_ROWS)


def get_engine(name: str) -> IngestEngine:
    """The engine named ``name``.

    Raises:
        ConfigError: no engine has that name (the message names the known ones).
    """
    try:
        return ENGINES[name]
    except KeyError:
        raise ConfigError(f"unknown ingest_engine {name!r}: the engines are {', '.join(ENGINES)}") from None


def engines_help() -> str:
    """The engines' names, as a CLI's metavar gives them: ``local|ray``."""
    return "|".join(ENGINES)
