"""What every query method runs against: ``QueryContext`` (the store, the settings, the embedder and the LLM,
or None offline).

Every method of the registry (kbgraph.query.methods.registry) is ``run(question, ctx, **options)``; the graph store and
the settings are the project's own classes, the embedder and the LLM anything with the methods of their
protocols (``kbgraph.embed.base.Embedder``, ``kbgraph.llm.base.LLM``: the real clients of ``kbgraph.embed`` /
``kbgraph.llm``, the embedding cache, the scripted test LLM).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kbgraph.embed.base import Embedder
from kbgraph.errors import QueryError
from kbgraph.llm.base import LLM
from kbgraph.query.models import AskEvent
from kbgraph.settings import Settings
from kbgraph.store import GraphStore


@dataclass(frozen=True)
class QueryContext:
    """The knowledge base a question is asked of: its connected ``store``, its ``settings`` (retrieval and
    decomposition parameters), its ``embedder`` (the one the graph was built with) and its ``llm`` (None: no
    LLM configured, only retrieval methods run). ``events``: where a streamed ask (kbgraph.query.streaming)
    sends what a method produces while it runs: ``AskEvent`` deltas of the final answer's text (and resets)
    and Algorithm 1's rounds as they finish; None when the answer is not streamed."""

    store: GraphStore
    settings: Settings
    embedder: Embedder
    llm: LLM | None = None
    events: Callable[[AskEvent], None] | None = None

    def need_llm(self) -> LLM:
        """``llm`` for a method that needs one (an answer method: kbgraph.query.ask runs one only when an LLM is
        configured). Raises QueryError naming the settings when ``llm`` is None."""
        if self.llm is None:
            raise QueryError("this method needs an LLM: set KBGRAPH_LLM_BASE_URL and KBGRAPH_LLM_MODEL")
        return self.llm

    def with_settings(self, settings: Settings) -> QueryContext:
        """The same knowledge base read with other ``settings`` (e.g. some propagation weights set to 0)."""
        return QueryContext(self.store, settings, self.embedder, self.llm, self.events)

    def round_finished(self, trace: Sequence[Any]) -> None:
        """A streamed ask: the last round of ``trace`` (Algorithm 1, MIGRES or HiRAG) has finished; send it as an
        ``AskEvent(type="round")``. Nothing when the answer is not streamed or ``trace`` is empty."""
        if self.events is not None and trace:
            self.events(AskEvent(type="round", round=trace[-1]))

    def with_events(self, events: Callable[[AskEvent], None] | None) -> QueryContext:
        """The same context whose methods send their streamed events to ``events``."""
        return QueryContext(self.store, self.settings, self.embedder, self.llm, events)
