"""Knowledge-aware task decomposition: PIKE-RAG §5.3.2 Algorithm 1 (paper 000) = KAR³ §3.4 Algorithm 1
(paper 003), method 'pike'.

    C_0 = ∅
    for t = 1..N:                                                    N = settings.decompose.decompose_rounds (5)
        proposals  <- LLM(q, C_{t-1})                                line 3, prompts.PROPOSER
        candidates <- for each proposal, its top-K atomic questions  line 4, K = settings.decompose.decompose_candidates
                      with cosine >= δ, and their chunks             δ = settings.decompose.decompose_threshold
        selected   <- LLM(q, C_{t-1}, candidates) or None            line 5, prompts.SELECTOR
        if None: break                                               lines 6-8
        C_t <- C_{t-1} ∪ {chunk of selected}                         lines 10-11
    answer <- LLM(q, C_t)                                            line 14, prompts.ANSWER

Retrieval (line 4) is the Fig. 11 path (b): ``store.vector_search('AtomicQuestion', embed(proposal), K)``
(cosine similarity), keep scores >= δ (003 §3.4: "provided their similarity to a proposed atomic tag meets or
exceeds a specified threshold δ"), then ``cypher/retrieve/chunks_of_questions.cypher`` for each atomic
question's chunk. Every proposal's candidates are listed, proposal by proposal, best first.

Excluding known chunks, backup retrieval and backup selection. The papers give the context to the proposer
"to avoid generating proposals linked to already known knowledge" (003 §3.4) and say that "the iteration
process may terminate earlier if it fails to retrieve suitable atomic tags" (003 §3); they describe no backup
step. The backups below are those of the authors' implementation (microsoft/PIKE-RAG,
pikerag/workflows/qa_decompose.py, ``QaDecompositionWorkflow``, with examples/*/configs/atomic_decompose.yml),
whose docstring reads: "It's designed to use the `atom_queries` to retrieve atom information while the
`query` would be used as back-up retrieval methods":

1. Candidates whose chunk is already in the context are dropped, after the top-K cut (``_filter_atom_infos``:
   "Filter out atom infos that have been chosen").
2. "Backup retrieval 1": if no candidate is left, the original question retrieves atomic questions
   (same δ, depth ``settings.baselines.hr_k`` = 8: the configs' ``retrieve_k: 8`` for a single query, next to
   ``atom_retrieve_k: 4`` = K per proposal), then the same exclusion. Trace: ``fallback='question_atoms'``.
3. "Backup retrieval 2": if still none, the original question retrieves chunks from the Chunk vector index
   (Fig. 11 path (a); same δ and depth); each chunk is offered as its atomic question most similar to the
   question (cosine of embeddings; that similarity is the candidate's score), then the same exclusion.
   Trace: ``fallback='question_chunks'``. If still none, the loop ends (nothing left to select).
4. Backup selection: when the atomic selector selects nothing (no valid ``question_idx``), the candidates'
   chunks are shown as paragraphs and the LLM picks one (``backup_selection_protocol:
   chunk_selection_protocol``, prompts.CHUNK_SELECTOR; one paragraph per distinct chunk). Only when this
   selects nothing too does the loop end (lines 6-8). Trace: ``selection='atom'|'chunk'``.
   ``backup_selection=False`` gives the papers' loop without this step.

Learned proposer (PIKE-RAG §5.3.3): with ``settings.decomposer.decomposer_model`` set, lines 3-5 of each round are one
request to that fine-tuned model (kbgraph.query.methods.decomposer_learned); its rounds are ``selection='learned'``.

A proposer answer with no sub-questions, or no valid JSON after the client's repair request, ends the loop
as in the authors' code. The final context is at most N chunks (PIKE-RAG §6.1 "limits the context for the
final answer to the five most useful knowledge chunks"); each becomes a citation with provenance from
``cypher/retrieve/chunk_details.cypher``.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, Field, field_validator

from kbgraph.errors import LLMError
from kbgraph.llm.base import LLM
from kbgraph.llm.bounds import MaxChars, MaxItems, answer_schema
from kbgraph.query import prompts
from kbgraph.query.answering import UsageMeter, citations_for, context_of, final_answer
from kbgraph.query.context import QueryContext
from kbgraph.query.graph import (
    chunk_details,
    retrieve_atomic,
    retrieve_chunks_as_candidates,
    scored_chunk,
    text_of,
)
from kbgraph.query.models import Answer, Candidate, ScoredChunk, TraceRound
from kbgraph.store import GraphStore
from kbgraph.query.methods.decomposer_learned import learned_round


# --- JSON answers of the prompts ------------------------------------------------------------------------


#: Bounds of the proposer's and selectors' answers (characters, items; kbgraph.llm.bounds sizes the budget).
THINKING_CHARS = 300
SUB_QUESTIONS = 4
SUB_QUESTION_CHARS = 160
#: Shortest sub-question a constrained decoder may write ("Who is X?" has 9 characters): ``minLength`` in the
#: schema sent, so a small model under a grammar writes a question rather than ``[""]`` (which ended Algorithm 1
#: after one round); validation drops only empty items.
SUB_QUESTION_MIN_CHARS = 8


@answer_schema
class Proposal(BaseModel):
    """Answer of the atomic query proposer (003 A.7): at most ``SUB_QUESTIONS`` sub-questions. The schema sent
    asks for at least one (``minItems`` 1: the prompt asks for "as many diverse questions as possible"; the loop
    stops at the selector), so a constrained decoder cannot close the list at once; an empty list from an
    endpoint without a grammar is still accepted and stops the loop."""

    EVERY_FIELD_REQUIRED: ClassVar[bool] = True  # kbgraph.llm.structured.sent_schema

    thinking: Annotated[str, MaxChars(THINKING_CHARS)] = ""
    sub_questions: Annotated[
        list[Annotated[str, MaxChars(SUB_QUESTION_CHARS, at_least=SUB_QUESTION_MIN_CHARS)]], MaxItems(SUB_QUESTIONS)
    ] = Field(default_factory=list, json_schema_extra={"minItems": 1})

    @field_validator("thinking", mode="before")
    @classmethod
    def _thinking(cls, v: Any) -> str:
        return text_of(v)

    @field_validator("sub_questions", mode="before")
    @classmethod
    def _questions(cls, v: Any) -> list[str]:
        if v is None:
            return []
        items = [v] if isinstance(v, str) else list(v)
        kept = [s for s in (" ".join(text_of(x).split()) for x in items) if s]
        first: dict[str, str] = {}
        for s in kept:  # a repeated item once, at its first place
            first.setdefault(s.casefold(), s)
        return list(first.values())


@answer_schema
class Selection(BaseModel):
    """Answer of the atomic tag selector (003 A.7): a 1-based index, or none."""

    thinking: Annotated[str, MaxChars(THINKING_CHARS)] = ""
    question_idx: int | None = None

    @field_validator("thinking", mode="before")
    @classmethod
    def _thinking(cls, v: Any) -> str:
        return text_of(v)

    @field_validator("question_idx", mode="before")
    @classmethod
    def _idx(cls, v: Any) -> int | None:
        return _index(v)


@answer_schema
class ChunkSelection(BaseModel):
    """Answer of the backup chunk selector (authors' code)."""

    thinking: Annotated[str, MaxChars(THINKING_CHARS)] = ""
    paragraph_idx: int | None = None

    @field_validator("thinking", mode="before")
    @classmethod
    def _thinking(cls, v: Any) -> str:
        return text_of(v)

    @field_validator("paragraph_idx", mode="before")
    @classmethod
    def _idx(cls, v: Any) -> int | None:
        return _index(v)


def _index(v: Any) -> int | None:
    """An integer index from int, float or digit string; None for null, 'None', '' or anything else."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("+-").isdigit():
        return int(v.strip())
    return None


# --- Algorithm 1 ------------------------------------------------------------------------------------------
def answer_pike(question: str, ctx: QueryContext, *, backup_selection: bool = True) -> Answer:
    """Method 'pike': ``question`` answered by knowledge-aware task decomposition (PIKE-RAG §5.3.2 Algorithm 1;
    module docstring). With ``ctx.events`` (a streamed ask) each round is sent as it finishes and the final
    answer's text as the LLM writes it (``AskEvent``). An LLMError of a proposer, selector or the final answer
    (invalid JSON, a failing server) ends a round or gives an empty answer whose rationale says why.
    Args:
        question: the clean question.
        ctx: the knowledge base (store, settings, embedder; ``ctx.llm`` required).
        backup_selection: offer the candidates' chunks when the selector picks none (authors' code).
    Returns:
        The ``Answer``: its rationale, one citation per context chunk, the per-round trace and the LLM usage.
    Raises:
        QueryError: ``ctx.llm`` is None.
        LLMError: the learned decomposer's server fails (``decomposer_model``, §5.3.3).
        StoreError: the store fails a statement."""
    store, settings, embedder, llm = ctx.store, ctx.settings, ctx.embedder, ctx.need_llm()
    meter = UsageMeter(llm)
    n_rounds, k, delta = (
        settings.decompose.decompose_rounds,
        settings.decompose.decompose_candidates,
        settings.decompose.decompose_threshold,
    )
    context: list[ScoredChunk] = []
    focus: list[str] = []
    trace: list[TraceRound] = []
    qvec = None

    for t in range(1, n_rounds + 1):
        ctx.round_finished(trace)  # round t - 1
        rnd = TraceRound(round=t)
        trace.append(rnd)
        if settings.decomposer.decomposer_model:  # §5.3.3: lines 3-5 are one call to the learned proposer
            if not learned_round(ctx, question, context, focus, trace, rnd):
                break
            continue
        known = context_of(context)
        # line 3: proposals
        proposal, stop = propose(llm, question, known)
        if proposal is not None:
            rnd.thinking, rnd.proposals = proposal.thinking, proposal.sub_questions
        if stop or proposal is None:  # (no proposal comes with a stop note)
            rnd.note = stop
            break
        # line 4: atomic retrieval, known chunks excluded, then the backups
        exclude = {c.id for c in context}
        vecs = embedder.embed(proposal.sub_questions)
        candidates = retrieve_atomic(store, proposal.sub_questions, vecs, k=k, threshold=delta, exclude=exclude)
        if not candidates:
            qvec = embedder.embed([question])[0] if qvec is None else qvec
            rnd.fallback = "question_atoms"
            candidates = retrieve_atomic(
                store, [question], [qvec], k=settings.baselines.hr_k, threshold=delta, exclude=exclude
            )
        if not candidates:
            rnd.fallback = "question_chunks"
            candidates = retrieve_chunks_as_candidates(
                store, embedder, question, qvec, k=settings.baselines.hr_k, threshold=delta, exclude=exclude
            )
        rnd.candidates = candidates
        if not candidates:
            rnd.note = f"stopped: no atomic question or chunk reaches similarity {delta:g}"
            break
        # line 5: selection (then the backup chunk selection)
        chosen, how = _select(llm, store, question, known, candidates, rnd, backup_selection)
        if chosen is None:
            rnd.note = "stopped: nothing selected"
            break
        # lines 10-11: the chunk joins the context
        row = chunk_details(store, [chosen.chunk_id]).get(chosen.chunk_id, {"id": chosen.chunk_id})
        rnd.selected, rnd.chunk_id, rnd.selection = chosen, chosen.chunk_id, how
        context.append(scored_chunk(row, chosen.score))
        focus.append(chosen.text or question)

    ctx.round_finished(trace)
    # line 14
    out = final_answer(llm, question, context, ctx.events)
    answer = Answer(
        question=question,
        answer=out.answer,
        rationale=out.rationale,
        method="pike",
        trace=trace,
        chunks=context,
        citations=citations_for(context, focus, embedder),
    )
    answer.usage = meter.report()
    return answer


def propose(llm: LLM, question: str, known: str) -> tuple[Proposal | None, str]:
    """Line 3 of Algorithm 1 (PIKE-RAG §5.3.2; also Algorithm 2's line 6, kbgraph.eval.decomposer_data): the
    atomic query proposer. An LLMError (no valid JSON, a failing server) is a stop note, not raised.
    Args:
        llm: the client.
        question: the question.
        known: the context text so far.
    Returns:
        (the proposer's answer, '') or (the answer or None, the note of a stop: no valid JSON, no proposal, or
        no sub-questions)."""
    try:
        proposal = llm.complete_json(prompts.proposer_messages(question, known), Proposal)
    except LLMError as exc:
        return None, f"stopped: the proposer gave no valid JSON ({exc})"
    return proposal, "" if proposal.sub_questions else "stopped: no sub-questions proposed"


def _select(
    llm: LLM, store: GraphStore, question: str, known: str, candidates: list[Candidate], rnd: TraceRound, backup: bool
) -> tuple[Candidate | None, str]:
    """Line 5: the atomic tag selector, then (``backup``) the chunk selector of the authors' code."""
    try:
        sel = llm.complete_json(prompts.selector_messages(question, known, [c.text for c in candidates]), Selection)
        rnd.selector_thinking = sel.thinking
        if sel.question_idx is not None and 1 <= sel.question_idx <= len(candidates):
            return candidates[sel.question_idx - 1], "atom"
    except LLMError as exc:
        rnd.selector_thinking = f"(no valid selection JSON: {exc})"
    if not backup:
        return None, ""
    first_of: dict[str, Candidate] = {}
    for c in candidates:
        first_of.setdefault(c.chunk_id, c)
    details = chunk_details(store, list(first_of))
    order = [cid for cid in first_of if cid in details]
    paragraphs = [(details[cid].get("document_title") or "", details[cid].get("text") or "") for cid in order]
    if not paragraphs:
        return None, ""
    try:
        chosen = llm.complete_json(prompts.chunk_selector_messages(question, known, paragraphs), ChunkSelection)
    except LLMError as exc:
        rnd.selector_thinking += f"\n(backup chunk selection: no valid JSON: {exc})"
        return None, ""
    rnd.selector_thinking = (rnd.selector_thinking + "\n" + chosen.thinking).strip()
    if chosen.paragraph_idx is not None and 1 <= chosen.paragraph_idx <= len(order):
        return first_of[order[chosen.paragraph_idx - 1]], "chunk"
    return None, ""
