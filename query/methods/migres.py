"""MIGRES, method 'migres': Missing Information Guided Retrieve-Extraction-Solving (paper 002 §3, Figure 1),
on the same graph, embedder and LLM as 'pike' (kbgraph.query.methods.decompose) and the baselines.

    known = ∅; history = [q]; shown = ∅                         Memory Module (§3.2)
    for t = 1..T:                                               T = settings.migres.migres_iterations (5, Table 12)
        queries <- [q] if t = 1                                 §3.1: MIGRES "begins with knowledge retrieval"
                   else LLM(q, history, known, missing)         Query Generator, prompts.migres.QUERY (≤ 3 new)
        kept    <- retrieve + re-rank filter (chunks, then      Retrieval Module, kbgraph.query.methods.migres_retrieve
                   sentences) for each query, minus shown
        if kept = ∅: kept <- LLM(query) for each query          LLM knowledge prompting (§4.5), KNOWLEDGE
        known   <- known ∪ LLM(queries, kept)                   Leaf Module: statements citing passages, LEAF
        judged  <- LLM(q, known)                                Main Module: answer, or "unanswerable" and the
        if judged is an answer: stop                            missing information, MAIN
        missing <- judged.missing_information
    answer <- judged's answer, or (T reached, or no new query) the QA prompt over ``known`` (solve)

Departures from the paper, each for a reason:

* The re-rank model is the knowledge base's embedder (cosine), not a cross-encoder (BGE-reranker-base): none
  is installed (kbgraph.query.methods.migres_retrieve says how θ is read).
* The Leaf Module's statements are not checked by an NLI model (T5-xxl-nli, §3.2/§4.1, is not installed);
  instead a statement must cite at least one passage shown to the Leaf Module (``support_passages``), else
  it is dropped and listed in the trace (``dropped``).
* The paper does not say what is answered when T iterations end without an answer; here the QA prompt of
  PIKE-RAG (kbgraph.query.answering, prompts.ANSWER) answers from the known information, so that every
  question gets an answer to score (the answer's rationale says so).
* A Query Generator answer with no new query (all repeat the Memory Module's history) ends the loop.

Citations: the chunks cited by the Leaf Module's statements, in the order they were first cited, each
quoting its sentence most similar to the first statement citing it. LLM knowledge is marked in the trace
(``knowledge_prompting``, statements with ``knowledge=True``) and is never a citation. Usage counts every
LLM call (Query Generator, knowledge prompting, Leaf, Main, solve). In a streamed ask (``ctx.events``) each
iteration is sent when it ends; the solve step streams its answer text as the LLM writes it; the Main
Module's answer (nested JSON) arrives whole at the end.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, Field, field_validator

from kbgraph.llm.base import LLM, usable_json
from kbgraph.llm.bounds import MaxChars, MaxItems, answer_schema
from kbgraph.query import prompts
from kbgraph.query.answering import QAOutput, UsageMeter, answer_json, citations_for
from kbgraph.query.context import QueryContext
from kbgraph.query.graph import text_of
from kbgraph.query.methods.migres_retrieve import Retriever, retrieve_filtered, shown_keys
from kbgraph.query.models import Answer, MigresRound, ScoredChunk
from kbgraph.query.prompts import migres as mp
from kbgraph.text import one_line

Extraction = MigresRound.MigresExtraction

_NUMBERED = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.):])\s*")
_INDEX = re.compile(r"-?\d+")


# --- JSON answers of the prompts (lenient: a small model's near misses still count) ------------------------
def _words(v: Any) -> str:
    """Text with its spacing collapsed; a list's items joined by '; ' (a model's list of missing facts)."""
    return "; ".join(map(_words, v)) if isinstance(v, list) else " ".join(text_of(v).split())


#: Bounds of the modules' answers (characters, items; kbgraph.llm.bounds sizes the token budget).
ANSWER_CHARS = 200
EXPLANATION_CHARS = 300
QUERY_CHARS = 160
#: Shortest query a constrained decoder may write (``minLength`` in the schema sent; validation drops only ``""``).
QUERY_MIN_CHARS = 4
MAX_QUERIES = 5
STATEMENT_CHARS = 200
MAX_STATEMENTS = 5

# Text fields of the answers: spacing collapsed (a list's items joined, _words), then cut to their bound. (Of two
# before-validators in one Annotated the last runs first.)
AnswerText = Annotated[str, MaxChars(ANSWER_CHARS), BeforeValidator(_words)]
ExplanationText = Annotated[str, MaxChars(EXPLANATION_CHARS), BeforeValidator(_words)]
StatementText = Annotated[str, MaxChars(STATEMENT_CHARS), BeforeValidator(_words)]


class MainVerdict(BaseModel):
    """The ``answer`` object of the Main Module: its text ("unanswerable" or the answer) and confidence 1-5."""

    text: AnswerText = ""
    confidence: int | None = None

    @field_validator("confidence", mode="before")
    @classmethod
    def _confidence(cls, v: Any) -> int | None:
        m = _INDEX.search(text_of(v)) if v is not None and not isinstance(v, bool) else None
        return int(m.group()) if m else None


@answer_schema
class MainOutput(BaseModel):
    """Answer of the Main Module (002 Appendix F)."""

    answer: MainVerdict = Field(default_factory=MainVerdict)
    explanation: ExplanationText = ""
    missing_information: ExplanationText = ""

    @field_validator("answer", mode="before")
    @classmethod
    def _answer(cls, v: Any) -> Any:
        return v if isinstance(v, dict | MainVerdict) else {"text": v}

    @property
    def answerable(self) -> bool:
        """Whether the Main Module gave an answer (not empty, not "unanswerable")."""
        text = self.answer.text.strip(" .\"'").lower()
        return bool(text) and "unanswerable" not in text


@answer_schema
class NewQueries(BaseModel):
    """Answer of the Query Generator (our JSON form of its one-query-a-line output), at most ``MAX_QUERIES``
    (the loop keeps ``migres_queries``)."""

    EVERY_FIELD_REQUIRED: ClassVar[bool] = True  # kbgraph.llm.structured.sent_schema

    queries: Annotated[list[Annotated[str, MaxChars(QUERY_CHARS, at_least=QUERY_MIN_CHARS)]], MaxItems(MAX_QUERIES)] = (
        Field(default_factory=list)
    )

    @field_validator("queries", mode="before")
    @classmethod
    def _queries(cls, v: Any) -> list[str]:
        items = v.splitlines() if isinstance(v, str) else list(v or [])
        return [q for q in (_NUMBERED.sub("", _words(x)) for x in items) if q]


class Statement(BaseModel):
    """One statement of the Leaf Module and the 0-based indexes of the passages it cites."""

    info: StatementText = ""
    support_passages: Annotated[list[int], MaxItems(MAX_STATEMENTS)] = Field(default_factory=list)

    @field_validator("support_passages", mode="before")
    @classmethod
    def _support(cls, v: Any) -> list[int]:
        items = v if isinstance(v, list) else [v]
        out: list[int] = []
        for x in items:
            if isinstance(x, bool):
                continue
            if isinstance(x, int) or (isinstance(x, float) and x.is_integer()):
                out.append(int(x))
            elif isinstance(x, str):  # "2", "Passage 2", "[2]"
                out += [int(m) for m in _INDEX.findall(x)]
        return out


@answer_schema
class LeafOutput(BaseModel):
    """Answer of the Leaf Module (002 Appendix F), at most ``MAX_STATEMENTS`` statements."""

    useful_information: Annotated[list[Statement], MaxItems(MAX_STATEMENTS)] = Field(default_factory=list)

    @field_validator("useful_information", mode="before")
    @classmethod
    def _list(cls, v: Any) -> Any:
        return [] if v is None else [v] if isinstance(v, dict) else v


# --- the loop ----------------------------------------------------------------------------------------------
def answer_migres(question: str, ctx: QueryContext) -> Answer:
    """Method 'migres': ``question`` answered with MIGRES (paper 002 §3; module docstring). An unusable JSON
    answer is recorded in the iteration's ``note``.
    Args:
        question: the clean question.
        ctx: the knowledge base (store, settings, embedder; ``ctx.llm`` required).
    Returns:
        The ``Answer`` with one :class:`MigresRound` per iteration, citations of the chunks the Leaf Module's
        statements cite, and the LLM usage of every call.
    Raises:
        QueryError: ``ctx.llm`` is None.
        LLMError: the LLM server fails.
        StoreError: the store fails a statement.
        ImportError: ``migres_retriever='bm25'`` and bm25s is missing (the message names the extra)."""
    settings, embedder, llm = ctx.settings, ctx.embedder, ctx.need_llm()
    meter = UsageMeter(llm)
    retriever = Retriever(ctx)
    known: list[Extraction] = []
    history = [question]
    shown: set[str] = set()
    used: dict[str, ScoredChunk] = {}
    focus: dict[str, str] = {}
    trace: list[MigresRound] = []
    missing, verdict = "", None

    for t in range(1, settings.migres.migres_iterations + 1):
        ctx.round_finished(trace)
        rnd = MigresRound(round=t, retriever=retriever.name, missing_information=missing)
        trace.append(rnd)
        if t == 1:
            rnd.queries = [question]
        else:
            rnd.generated = True
            rnd.queries = _new_queries(llm, question, history, known, missing, settings.migres.migres_queries, rnd)
            if not rnd.queries:
                break
            history += rnd.queries
        # Retrieval Module (and LLM knowledge prompting when it keeps nothing), then the Leaf Module
        rnd.retrieved, kept = retrieve_filtered(retriever, rnd.queries, shown)
        shown |= shown_keys(kept)
        rnd.passages = [k.passage for k in kept]
        if kept:
            _extract(llm, rnd, [(k.chunk.document_title, k.text) for k in kept], [k.chunk for k in kept])
        elif settings.migres.migres_knowledge_prompting:
            rnd.knowledge_prompting = True
            rnd.knowledge = [" ".join(llm.complete(mp.knowledge_messages(q)).split()) for q in rnd.queries]
            texts = [k for k in rnd.knowledge if k]
            if texts:
                _extract(llm, rnd, [("", k) for k in texts], [None] * len(texts))
        else:
            rnd.note = f"no chunk reached θ = {settings.migres.migres_threshold:g} (knowledge prompting is off)"
        for e in rnd.extractions:
            known.append(e)
            for cid in e.chunk_ids:
                focus.setdefault(cid, e.info)
        used.update({k.chunk.id: k.chunk for k in kept if k.chunk.id in focus and k.chunk.id not in used})
        # Main Module
        verdict = _judge(llm, question, known, rnd)
        if rnd.answerable:
            break
        missing = verdict.missing_information if verdict else ""

    ctx.round_finished(trace)
    chunks = [used[cid] for cid in focus if cid in used]
    if verdict is not None and verdict.answerable:
        out = QAOutput(answer=verdict.answer.text, rationale=verdict.explanation)
    else:
        out = answer_json(llm, prompts.answer_messages(question, "\n".join(e.info for e in known)), ctx.events)
        why = trace[-1].note or f"no answer from the Main Module after {len(trace)} iteration(s)"
        out.rationale = f"({why}; answered from the known information) {out.rationale}".strip()
    answer = Answer(
        question=question,
        answer=out.answer,
        rationale=out.rationale,
        method="migres",
        trace=trace,
        chunks=chunks,
        citations=citations_for(chunks, [focus[c.id] for c in chunks], embedder),
    )
    answer.usage = meter.report()
    return answer


def _new_queries(
    llm: LLM, question: str, history: list[str], known: list[Extraction], missing: str, limit: int, rnd: MigresRound
) -> list[str]:
    """The Query Generator: at most ``limit`` queries not in ``history`` (case and spacing ignored); [] with
    ``rnd.note`` saying why when there is none."""
    gen, why = usable_json(llm, mp.query_messages(question, history, [e.info for e in known], missing), NewQueries)
    if gen is None:
        rnd.note = f"stopped: the Query Generator gave no valid JSON ({one_line(why, 200)})"
        return []
    seen = {" ".join(h.lower().split()) for h in history}
    out = []
    for q in gen.queries:
        key = " ".join(q.lower().split())
        if key not in seen:
            seen.add(key)
            out.append(q)
    if not out:
        rnd.note = f"stopped: the Query Generator gave no new query ({gen.queries or 'none'})"
    return out[:limit]


def _extract(llm: LLM, rnd: MigresRound, passages: list[tuple[str, str]], chunks: list[ScoredChunk | None]) -> None:
    """The Leaf Module over ``passages`` (``chunks[i]`` is passage i's chunk, None for LLM knowledge): the
    statements citing a shown passage go to ``rnd.extractions``, the others to ``rnd.dropped``."""
    leaf, why = usable_json(llm, mp.leaf_messages(rnd.queries, passages), LeafOutput)
    if leaf is None:
        rnd.note = f"the Leaf Module gave no valid JSON ({one_line(why, 200)})"
        return
    for s in leaf.useful_information:
        cited = list(dict.fromkeys(i for i in s.support_passages if 0 <= i < len(passages)))
        if not s.info:
            continue
        if not cited:
            rnd.dropped.append(s.info)
            continue
        ids = list(dict.fromkeys(c.id for c in (chunks[i] for i in cited) if c is not None))
        rnd.extractions.append(Extraction(info=s.info, chunk_ids=ids, knowledge=not ids))


def _judge(llm: LLM, question: str, known: list[Extraction], rnd: MigresRound) -> MainOutput | None:
    """The Main Module: fills ``rnd``'s judgement; None (unanswerable) when its JSON is unusable."""
    verdict, why = usable_json(llm, mp.main_messages(question, [e.info for e in known]), MainOutput)
    if verdict is None:
        rnd.note = (rnd.note + "; " if rnd.note else "") + f"the Main Module gave no valid JSON ({one_line(why, 200)})"
        return None
    rnd.answerable, rnd.answer = verdict.answerable, verdict.answer.text
    rnd.confidence, rnd.explanation = verdict.answer.confidence, verdict.explanation
    return verdict
