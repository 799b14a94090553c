"""What kbgraph.eval needs of a knowledge base: :class:`EvalTarget`. ``kbgraph.kb.KnowledgeBase`` is one; the
evaluation (``evaluate``), the run folder and the data collections take any object with these members, so
kbgraph.eval does not import kbgraph.kb, the layer above it (docs/architecture.md)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from kbgraph.embed.base import Embedder
from kbgraph.ingest.report import IngestReport
from kbgraph.llm.base import LLM
from kbgraph.models import StoreStats
from kbgraph.settings import Settings
from kbgraph.store import GraphStore


class EvalTarget(Protocol):
    """A knowledge base as evaluation uses it: its settings, name, connected store, embedder and LLM (None
    offline), incremental ingestion of a data set's corpus (returns a report with ``added``, ``unchanged``,
    ``failed``, ...) and its node and relationship counts."""

    settings: Settings

    @property
    def name(self) -> str: ...

    @property
    def store(self) -> GraphStore: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def llm(self) -> LLM | None: ...

    def ingest(self, paths: Sequence[str | Path], *, progress: bool | None = None) -> IngestReport: ...

    def stats(self) -> StoreStats: ...
