"""The one list of query methods: ``METHODS``, name -> :class:`Method`, read by ``ask`` (kbgraph.query.ask),
``eval`` (kbgraph.eval), the CLI's help and any other front end. Adding a method = one module with its
``run`` + one row here.

Two kinds (``Method.kind``):

* ``"answer"``: ``run(question, ctx) -> Answer``; all need an LLM (``needs_llm``). 'auto' (the default with an
  LLM) classifies the question (PIKE-RAG §3.2) and runs the method of its level (§4.2: factual -> 'l1', the
  L1 system of §5.2: score-propagation retrieval + one QA prompt; every other class -> 'pike'; L3/L4 are not
  built; kbgraph.query.classify, kbgraph.query.l1). 'pike' is knowledge-aware
  task decomposition, PIKE-RAG §5.3.2 Algorithm 1 (paper 003 §3.4); 'naive', 'naive_hr', 'cot' and
  'self_ask' are the baselines of PIKE-RAG §6.1 / paper 003 §4 (kbgraph.query.baselines); 'migres' is
  MIGRES, missing-information guided retrieve-extract-solve (paper 002 §3; kbgraph.query.migres); 'hirag' is
  HiRAG, hierarchical retrieval with rethink (paper 004 §4; kbgraph.query.hirag).
* ``"retrieval"``: ``run(question, ctx, *, k, explain=False) -> list[ScoredChunk]``, best first, no LLM:
  'dense' (Chunk vector top-k), 'bm25' (the lexical baseline, kbgraph.query.bm25; ``index=`` reuses an open
  ``BM25Index``), 'hierarchical' (Fig. 11's union of paths (a) and (b) at the §6.1 thresholds,
  kbgraph.query.hierarchical) and 'propagation' (every layer's seeds + score propagation, §5.2.3; the default
  without an LLM) (kbgraph.query.retrieval).

The question given to ``run`` is already clean (``ask.clean_question``). ``run`` is the function itself, so a
reader (or a tool) follows a method from its row to its code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from kbgraph.errors import QueryError
from kbgraph.query.baselines import answer_cot, answer_naive, answer_naive_hr, answer_self_ask
from kbgraph.query.bm25 import retrieve_bm25
from kbgraph.query.classify import answer_auto
from kbgraph.query.decompose import answer_pike
from kbgraph.query.hierarchical import retrieve_hierarchical
from kbgraph.query.hirag import answer_hirag
from kbgraph.query.l1 import answer_l1
from kbgraph.query.migres import answer_migres
from kbgraph.query.retrieval import retrieve_dense, retrieve_propagation

#: The method used when none is named: with an LLM, and without one (also the fallback of an answer method
#: when no LLM is configured).
DEFAULT_ANSWER_METHOD = "auto"
DEFAULT_RETRIEVAL_METHOD = "propagation"


@dataclass(frozen=True)
class Method:
    """One row of the registry: ``run`` is the method's function (see the module doc for its signature by
    kind)."""

    name: str
    kind: Literal["retrieval", "answer"]
    needs_llm: bool
    run: Callable[..., Any]
    summary: str


_ROWS = [
    Method("auto", "answer", True, answer_auto,
           "classify the question (PIKE-RAG §3.2), then factual -> l1, others -> pike (§4.2)"),
    Method("pike", "answer", True, answer_pike,
           "knowledge-aware task decomposition (PIKE-RAG Algorithm 1)"),
    Method("l1", "answer", True, answer_l1,
           "PIKE-RAG's L1 system: score-propagation retrieval (§5.2.3) + one QA prompt"),
    Method("naive", "answer", True, answer_naive, "naive RAG over the Chunk vector index"),
    Method("naive_hr", "answer", True, answer_naive_hr,
           "naive RAG over hierarchical retrieval (Fig. 11 paths a+b)"),
    Method("cot", "answer", True, answer_cot, "zero-shot chain of thought, no retrieval"),
    Method("self_ask", "answer", True, answer_self_ask, "Self-Ask with retrieval"),
    Method("migres", "answer", True, answer_migres,
           "missing-information guided retrieve-extract-solve (MIGRES, paper 002 §3)"),
    Method("hirag", "answer", True, answer_hirag,
           "hierarchical retrieval with rethink (HiRAG, paper 004 §4)"),
    Method("dense", "retrieval", False, retrieve_dense, "Chunk vector top-k"),
    Method("bm25", "retrieval", False, retrieve_bm25, "BM25 over the chunks' text"),
    Method("hierarchical", "retrieval", False, retrieve_hierarchical,
           "hierarchical retrieval, Fig. 11's union of paths a and b (PIKE-RAG §6.1 thresholds)"),
    Method("propagation", "retrieval", False, retrieve_propagation,
           "layer seeds + score propagation (§5.2.3)"),
]  # fmt: skip
METHODS: dict[str, Method] = {m.name: m for m in _ROWS}
ANSWER_METHODS = tuple(m.name for m in _ROWS if m.kind == "answer")
RETRIEVAL_METHODS = tuple(m.name for m in _ROWS if m.kind == "retrieval")
ALL_METHODS = tuple(METHODS)


def get_method(name: str, kind: str | None = None) -> Method:
    """The method called ``name`` (of ``kind``, when given). Raises QueryError naming the choices."""
    method = METHODS.get(name)
    if method is None or (kind is not None and method.kind != kind):
        choices = [m.name for m in _ROWS if kind is None or m.kind == kind]
        what = f"{kind} method" if kind else "method"
        raise QueryError(f"unknown {what} {name!r}; choose one of {', '.join(choices)}")
    return method


def methods_help(kind: str | None = None) -> str:
    """The method names for a command's help: ``"pike | naive | ... (need an LLM) | dense | ... (retrieval
    only)"``, or the names of one ``kind`` joined by ``|``."""
    if kind is not None:
        return " | ".join(m.name for m in _ROWS if m.kind == kind)
    return f"{' | '.join(ANSWER_METHODS)} (need an LLM) | {' | '.join(RETRIEVAL_METHODS)} (retrieval only)"
