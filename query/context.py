"""What every query method runs against: ``QueryContext`` (the store, the settings, the embedder and the LLM,
or None offline), and the two protocols that say what the query code calls on an embedder and an LLM.

Every method of the registry (kbgraph.query.methods) is ``run(question, ctx, **options)``; the graph store and
the settings are the project's own classes, the embedder and the LLM anything with these methods (the real
clients of ``kbgraph.embed`` / ``kbgraph.llm``, the embedding cache, the scripted test LLM).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np
from pydantic import BaseModel

from kbgraph.query.models import AskEvent
from kbgraph.settings import Settings
from kbgraph.store import GraphStore

M = TypeVar("M", bound=BaseModel)


class Embedder(Protocol):
    """Turns texts into vectors: the question, proposals, sentences of the evidence."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array (len(texts), dimension), rows L2-normalised (cosine = dot product)."""
        ...


class LLM(Protocol):
    """A chat model: plain completions (Self-Ask, the judge) and schema-validated JSON answers (the prompts of
    PIKE-RAG Algorithm 1 and the QA prompt). ``usage`` has ``calls``, ``prompt_tokens``,
    ``completion_tokens``, ``seconds`` and ``cached_calls``, read as deltas by ``answering.UsageMeter``.
    ``sink`` (a ``kbgraph.llm.json_stream.TextSink``) streams a JSON answer's text as it is generated; it is
    passed only when an answer is streamed. Errors: ``kbgraph.errors.LLMError``."""

    usage: Any

    def complete(self, messages: list[dict[str, str]], *, model: str | None = None,
                 temperature: float | None = None, max_tokens: int | None = None) -> str: ...  # fmt: skip

    def complete_json(self, messages: list[dict[str, str]], schema: type[M], *, model: str | None = None,
                      temperature: float | None = None, max_tokens: int | None = None,
                      sink: Any = None) -> M: ...  # fmt: skip


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
