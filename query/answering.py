"""The generation step shared by the LLM methods: the chunks as the prompts' context, the QA prompt over them
(Algorithm 1 line 14, PIKE-RAG §5.3.2; the answer of the RAG baselines, §6.1), one citation per context
chunk, and the LLM usage a method spent.

Algorithm 1 (kbgraph.query.methods.decompose) and the baselines (kbgraph.query.methods.baselines) import from here, never
from each other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, field_validator

from kbgraph.embed.base import Embedder
from kbgraph.errors import LLMError
from kbgraph.llm.base import LLM, BaseLLM, UsageTally
from kbgraph.llm.bounds import MaxChars, answer_schema
from kbgraph.llm.json_stream import JSONFieldStream
from kbgraph.query import prompts
from kbgraph.query.evidence import sentences
from kbgraph.query.graph import text_of
from kbgraph.query.models import AskEvent, Citation, ScoredChunk, UsageReport
from kbgraph.text import chunk_body

#: Characters of a citation's quote in an LLM answer.
QUOTE_CHARS = 300
#: Longest answer and rationale of the QA prompt (characters; kbgraph.llm.bounds sizes the token budget).
ANSWER_CHARS = 200
RATIONALE_CHARS = 400


@answer_schema
class QAOutput(BaseModel):
    """Answer of the question-answering prompt (003 A.7): at most ``ANSWER_CHARS`` and ``RATIONALE_CHARS``."""

    answer: Annotated[str, MaxChars(ANSWER_CHARS)] = ""
    rationale: Annotated[str, MaxChars(RATIONALE_CHARS)] = ""

    @field_validator("answer", "rationale", mode="before")
    @classmethod
    def _str(cls, v: Any) -> str:
        return text_of(v)


class UsageMeter:
    """LLM usage spent since construction by this request alone: a :class:`kbgraph.llm.base.UsageTally` of the
    calling context, so answers running at once on a shared client (``kbgraph serve``) each count only their own
    calls. An LLM that is not a :class:`~kbgraph.llm.base.BaseLLM` (a client of its own with a ``usage``) is
    measured by deltas of its ``usage``; zeros for an LLM without usage."""

    KEYS = ("calls", "prompt_tokens", "completion_tokens", "seconds", "cached_calls")

    def __init__(self, llm: LLM | None):
        self.llm = llm
        self.tally = UsageTally() if isinstance(llm, BaseLLM) else None
        self.start = self._snapshot()

    def _snapshot(self) -> dict[str, float]:
        u = self.tally.usage if self.tally is not None else getattr(self.llm, "usage", None)
        return {k: float(getattr(u, k, 0) or 0) for k in self.KEYS}

    def report(self) -> UsageReport:
        """Calls, tokens, seconds (rounded to 0.1 ms) and cached calls since construction."""
        now = self._snapshot()
        d = {k: now[k] - self.start[k] for k in now}
        return UsageReport(
            calls=int(d["calls"]),
            prompt_tokens=int(d["prompt_tokens"]),
            completion_tokens=int(d["completion_tokens"]),
            seconds=round(d["seconds"], 4),
            cached_calls=int(d["cached_calls"]),
        )


def context_of(chunks: Sequence[ScoredChunk]) -> str:
    """The chunks as the prompts' context: each chunk's document title and ``kbgraph.text.chunk_body``."""
    return prompts.context_string([(c.document_title, chunk_body(c.kind, c.text, c.summary)) for c in chunks])


def citations_for(chunks: Sequence[ScoredChunk], focus: Sequence[str], embedder: Embedder) -> list[Citation]:
    """One citation per chunk; quote = the chunk's sentence most similar to its ``focus`` text (the
    selected atomic question, or the question), else its first ~200 characters; at most QUOTE_CHARS."""
    if not chunks:
        return []
    groups = [sentences(c.text)[:60] or [c.text[:200]] for c in chunks]
    flat = [s for g in groups for s in g]
    quotes: list[str] = []
    try:
        vecs = np.asarray(embedder.embed([*focus, *flat]), dtype=np.float32)
        fvecs, svecs = vecs[: len(focus)], vecs[len(focus) :]
        i = 0
        for n, g in enumerate(groups):
            sims = svecs[i : i + len(g)] @ fvecs[n]
            quotes.append(g[int(np.argmax(sims))])
            i += len(g)
    except Exception:  # noqa: BLE001 - a quote is a convenience; the chunk's opening words will do
        quotes = [c.text[:200] for c in chunks]
    out = []
    for c, quote in zip(chunks, quotes, strict=True):
        quote = " ".join(quote.split())
        out.append(
            Citation(
                chunk_id=c.id,
                document_title=c.document_title or c.document_id,
                document_uri=c.document_uri,
                section=c.section_path,
                page=c.page,
                quote=quote if len(quote) <= QUOTE_CHARS else quote[: QUOTE_CHARS - 3] + "...",
            )
        )
    return out


def final_answer(
    llm: LLM, question: str, chunks: Sequence[ScoredChunk], events: Callable[[AskEvent], None] | None = None
) -> QAOutput:
    """Algorithm 1 line 14 (and the RAG baselines): the QA prompt over the chunks (:func:`answer_json`)."""
    return answer_json(llm, prompts.answer_messages(question, context_of(chunks)), events)


def answer_json(llm: LLM, messages: list[dict[str, str]], events: Callable[[AskEvent], None] | None = None) -> QAOutput:
    """The :class:`QAOutput` of a question-answering prompt. ``events`` (a streamed ask): the text of the
    ``answer`` field goes to it as ``AskEvent(type="delta")`` pieces while the LLM writes it, and
    ``AskEvent(type="reset")`` before the client's repair request. If the LLM fails or gives no valid JSON even
    after that request, the answer is empty and the rationale says why (the authors' parser answers 'parsing
    error')."""
    sink = None
    if events is not None:
        sink = JSONFieldStream(
            "answer",
            lambda text: events(AskEvent(type="delta", text=text)),
            lambda: events(AskEvent(type="reset")),
        )
    try:
        if sink is None:
            return llm.complete_json(messages, QAOutput)
        return llm.complete_json(messages, QAOutput, sink=sink)
    except LLMError as exc:
        return QAOutput(answer="", rationale=f"no valid answer JSON from the LLM: {exc}")
