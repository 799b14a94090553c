"""The one list of query methods: ``METHODS``, name -> row, read by ``ask`` (kbgraph.query.ask), ``eval``
(kbgraph.eval), the CLI's help and any other front end. Adding a method = one module with its ``run`` + one row
here (+ its section of docs/methods.md, which a test holds to this list).

Two kinds of row, each typed by the function it holds (mypy, strict on kbgraph.query, rejects a row whose
function does not fit its kind; the ``TYPE_CHECKING`` block at the end proves it):

* :class:`AnswerRow` (``kind`` "answer"): ``run`` is an :class:`AnswerMethod`, ``run(question, ctx) -> Answer``;
  all need an LLM (``needs_llm``). 'auto' (the default with an LLM) classifies the question (PIKE-RAG §3.2) and
  runs the method of its level (§4.2: factual -> 'l1', the L1 system of §5.2: score-propagation retrieval + one
  QA prompt; every other class -> 'pike'; L3/L4 are not built; kbgraph.query.methods.classify, kbgraph.query.methods.l1).
  'pike' is knowledge-aware task decomposition, PIKE-RAG §5.3.2 Algorithm 1 (paper 003 §3.4); 'naive',
  'naive_hr', 'cot', 'self_ask' and 'self_ask_hr' are the baselines of PIKE-RAG §6.1 / paper 003 §4
  (kbgraph.query.methods.baselines); 'migres' is MIGRES, missing-information guided retrieve-extract-solve (paper 002
  §3; kbgraph.query.methods.migres); 'hirag' is HiRAG, hierarchical retrieval with rethink (paper 004 §4;
  kbgraph.query.methods.hirag).
* :class:`RetrievalRow` (``kind`` "retrieval"): ``run`` is a :class:`RetrievalMethod`, ``run(question, ctx, *,
  k, explain=False) -> list[ScoredChunk]``, best first, no LLM: 'dense' (Chunk vector top-k), 'bm25' (the
  lexical baseline, kbgraph.query.bm25), 'hierarchical' (Fig. 11's union of paths (a) and (b) at the §6.1
  thresholds, kbgraph.query.methods.hierarchical) and 'propagation' (every layer's seeds + score propagation, §5.2.3;
  the default without an LLM) (kbgraph.query.methods.retrieval).

What a front end needs to know of a method beyond its kind is a capability on its row, never a test of its name:
``AnswerRow.retrieves`` (False: no context chunks, so no retrieval metrics: 'cot'), ``RetrievalRow.prepare``
(builds or loads what the method keeps between questions, so that an evaluation's clock does not count it:
'bm25''s index) and ``settings_group``, the group of kbgraph.settings that holds the method's own settings
(``settings.<group>``). The groups stay in kbgraph.settings_groups, below this package (the import layers of
pyproject.toml: the settings cannot import the registry to compose them); the row names its group, and
tests/unit/test_methods_registry.py checks that every named group exists and every method group is named.

The question given to ``run`` is already clean (``ask.clean_question``). ``run`` is the function itself, so a
reader (or a tool) follows a method from its row to its code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, overload

from kbgraph.errors import QueryError
from kbgraph.query.methods.baselines import (
    answer_cot,
    answer_naive,
    answer_naive_hr,
    answer_self_ask,
    answer_self_ask_hr,
)
from kbgraph.query.bm25 import retrieve_bm25, shared_index
from kbgraph.query.methods.classify import answer_auto
from kbgraph.query.context import QueryContext
from kbgraph.query.methods.decompose import answer_pike
from kbgraph.query.methods.hierarchical import retrieve_hierarchical
from kbgraph.query.methods.hirag import answer_hirag
from kbgraph.query.methods.l1 import answer_l1
from kbgraph.query.methods.migres import answer_migres
from kbgraph.query.models import Answer, ScoredChunk
from kbgraph.query.methods.retrieval import retrieve_dense, retrieve_propagation

#: The method used when none is named: with an LLM, and without one (also the fallback of an answer method
#: when no LLM is configured).
DEFAULT_ANSWER_METHOD = "auto"
DEFAULT_RETRIEVAL_METHOD = "propagation"

Kind = Literal["retrieval", "answer"]


class RetrievalMethod(Protocol):
    """A retrieval method: the top ``k`` chunks for the (clean) ``question``, best first, with their score
    terms when ``explain``; no LLM."""

    def __call__(self, question: str, ctx: QueryContext, /, *, k: int, explain: bool = False) -> list[ScoredChunk]: ...


class AnswerMethod(Protocol):
    """An answer method: the (clean) ``question`` answered with ``ctx.llm`` (never None when it runs)."""

    def __call__(self, question: str, ctx: QueryContext, /) -> Answer: ...


@dataclass(frozen=True)
class RetrievalRow:
    """One retrieval method of the registry. ``prepare``: builds or loads what the method keeps between
    questions (before an evaluation starts its clock) and returns a line saying what it did; None = nothing to
    prepare. ``settings_group``: the group of kbgraph.settings holding the method's settings, if any."""

    name: str
    run: RetrievalMethod
    summary: str
    settings_group: str | None = None
    prepare: Callable[[QueryContext], str] | None = None
    kind: ClassVar[Literal["retrieval"]] = "retrieval"
    needs_llm: ClassVar[bool] = False


@dataclass(frozen=True)
class AnswerRow:
    """One answer method of the registry (needs an LLM). ``retrieves``: False for a method that answers from no
    retrieved chunk (no retrieval metrics); ``settings_group`` as :class:`RetrievalRow`'s."""

    name: str
    run: AnswerMethod
    summary: str
    settings_group: str | None = None
    retrieves: bool = True
    kind: ClassVar[Literal["answer"]] = "answer"
    needs_llm: ClassVar[bool] = True


#: A row of the registry, of either kind.
Method = RetrievalRow | AnswerRow


def _prepare_bm25(ctx: QueryContext) -> str:
    """Method 'bm25': this process's index of the knowledge base, built or loaded (kbgraph.query.bm25)."""
    index = shared_index(ctx.store, ctx.settings)
    return f"BM25 index of {len(index):,} chunks {'built' if index.built else 'loaded'} ({index.folder})"


_ROWS: list[Method] = [
    AnswerRow(
        "auto",
        answer_auto,
        "classify the question (PIKE-RAG §3.2), then factual -> l1, others -> pike (§4.2)",
        "routing",
    ),
    AnswerRow("pike", answer_pike, "knowledge-aware task decomposition (PIKE-RAG Algorithm 1)", "decompose"),
    AnswerRow("l1", answer_l1, "PIKE-RAG's L1 system: score-propagation retrieval (§5.2.3) + one QA prompt", "routing"),
    AnswerRow("naive", answer_naive, "naive RAG over the Chunk vector index", "baselines"),
    AnswerRow("naive_hr", answer_naive_hr, "naive RAG over hierarchical retrieval (Fig. 11 paths a+b)", "baselines"),
    AnswerRow("cot", answer_cot, "zero-shot chain of thought, no retrieval", retrieves=False),
    AnswerRow("self_ask", answer_self_ask, "Self-Ask with retrieval (each follow-up: Chunk vector index)", "baselines"),
    AnswerRow(
        "self_ask_hr",
        answer_self_ask_hr,
        "Self-Ask with hierarchical retrieval (each follow-up: Fig. 11 paths a+b; PIKE-RAG §6.1)",
        "baselines",
    ),
    AnswerRow(
        "migres", answer_migres, "missing-information guided retrieve-extract-solve (MIGRES, paper 002 §3)", "migres"
    ),
    AnswerRow("hirag", answer_hirag, "hierarchical retrieval with rethink (HiRAG, paper 004 §4)", "hirag"),
    RetrievalRow("dense", retrieve_dense, "Chunk vector top-k"),
    RetrievalRow("bm25", retrieve_bm25, "BM25 over the chunks' text", prepare=_prepare_bm25),
    RetrievalRow(
        "hierarchical",
        retrieve_hierarchical,
        "hierarchical retrieval, Fig. 11's union of paths a and b (PIKE-RAG §6.1 thresholds)",
        "baselines",
    ),
    RetrievalRow("propagation", retrieve_propagation, "layer seeds + score propagation (§5.2.3)", "retrieval"),
]
METHODS: dict[str, Method] = {m.name: m for m in _ROWS}
ANSWER_METHODS = tuple(m.name for m in _ROWS if m.kind == "answer")
RETRIEVAL_METHODS = tuple(m.name for m in _ROWS if m.kind == "retrieval")
ALL_METHODS = tuple(METHODS)
#: Answer methods that retrieve nothing (no retrieval metrics in an evaluation).
NO_RETRIEVAL = tuple(m.name for m in _ROWS if isinstance(m, AnswerRow) and not m.retrieves)


@overload
def get_method(name: str, kind: Literal["retrieval"]) -> RetrievalRow: ...
@overload
def get_method(name: str, kind: Literal["answer"]) -> AnswerRow: ...
@overload
def get_method(name: str, kind: None = None) -> Method: ...
def get_method(name: str, kind: Kind | None = None) -> Method:
    """The method called ``name``, looked up in ``METHODS``.
    Args:
        name: the method's name ('auto', 'pike', ..., 'propagation').
        kind: "answer" or "retrieval": only a method of that kind; None: either.
    Returns:
        Its row: an :class:`AnswerRow` or a :class:`RetrievalRow` (``run``, ``summary``, ``settings_group``, ...).
    Raises:
        QueryError: no method of that name (and kind); the message names the choices."""
    method = METHODS.get(name)
    if method is None or (kind is not None and method.kind != kind):
        choices = [m.name for m in METHODS.values() if kind is None or m.kind == kind]
        what = f"{kind} method" if kind else "method"
        raise QueryError(f"unknown {what} {name!r}; choose one of {', '.join(choices)}")
    return method


def methods_help(kind: Kind | None = None) -> str:
    """The method names for a command's help.
    Args:
        kind: "answer" or "retrieval": the names of that kind only; None: both kinds.
    Returns:
        ``"pike | naive | ... (need an LLM) | dense | ... (retrieval only)"``, or the names of one ``kind``
        joined by ``|``."""
    if kind is not None:
        return " | ".join(m.name for m in _ROWS if m.kind == kind)
    return f"{' | '.join(ANSWER_METHODS)} (need an LLM) | {' | '.join(RETRIEVAL_METHODS)} (retrieval only)"


if TYPE_CHECKING:  # a row whose function does not fit its kind is a type error (warn_unused_ignores: if it
    # stopped being one, these ignores would be unused and mypy would fail)
    RetrievalRow("wrong", answer_cot, "")  # type: ignore[arg-type]
    AnswerRow("wrong", retrieve_dense, "")  # type: ignore[arg-type]
