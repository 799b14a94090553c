"""Knowledge-aware task decomposition: PIKE-RAG §5.3.2 Algorithm 1 (paper 000) = KAR³ §3.4 Algorithm 1
(paper 003), method 'pike'.

    C_0 = ∅
    for t = 1..N:                                                    N = settings.decompose_rounds (5)
        proposals  <- LLM(q, C_{t-1})                                line 3, prompts.PROPOSER
        candidates <- for each proposal, its top-K atomic questions  line 4, K = settings.decompose_candidates
                      with cosine >= δ, and their chunks             δ = settings.decompose_threshold
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
   (same δ, depth ``settings.hr_k`` = 8: the configs' ``retrieve_k: 8`` for a single query, next to
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

A proposer answer with no sub-questions, or no valid JSON after the client's repair request, ends the loop
as in the authors' code. The final context is at most N chunks (PIKE-RAG §6.1 "limits the context for the
final answer to the five most useful knowledge chunks"); each becomes a citation with provenance from
``cypher/retrieve/chunk_details.cypher``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, field_validator

from kbgraph.errors import LLMError
from kbgraph.query import prompts
from kbgraph.query.models import Answer, Candidate, Citation, TraceRound, UsageReport
from kbgraph.query.propagation import ScoredChunk

QUOTE_CHARS = 300


# --- JSON answers of the prompts ------------------------------------------------------------------------
def _text(v: Any) -> str:
    return "" if v is None else v if isinstance(v, str) else str(v)


class Proposal(BaseModel):
    """Answer of the atomic query proposer (003 A.7)."""

    thinking: str = ""
    sub_questions: list[str] = Field(default_factory=list)

    @field_validator("thinking", mode="before")
    @classmethod
    def _thinking(cls, v: Any) -> str:
        return _text(v)

    @field_validator("sub_questions", mode="before")
    @classmethod
    def _questions(cls, v: Any) -> list[str]:
        if v is None:
            return []
        items = [v] if isinstance(v, str) else list(v)
        return [s for s in (" ".join(_text(x).split()) for x in items) if s]


class Selection(BaseModel):
    """Answer of the atomic tag selector (003 A.7): a 1-based index, or none."""

    thinking: str = ""
    question_idx: int | None = None

    @field_validator("thinking", mode="before")
    @classmethod
    def _thinking(cls, v: Any) -> str:
        return _text(v)

    @field_validator("question_idx", mode="before")
    @classmethod
    def _idx(cls, v: Any) -> int | None:
        return _index(v)


class ChunkSelection(BaseModel):
    """Answer of the backup chunk selector (authors' code)."""

    thinking: str = ""
    paragraph_idx: int | None = None

    @field_validator("thinking", mode="before")
    @classmethod
    def _thinking(cls, v: Any) -> str:
        return _text(v)

    @field_validator("paragraph_idx", mode="before")
    @classmethod
    def _idx(cls, v: Any) -> int | None:
        return _index(v)


class QAOutput(BaseModel):
    """Answer of the question-answering prompt (003 A.7)."""

    answer: str = ""
    rationale: str = ""

    @field_validator("answer", "rationale", mode="before")
    @classmethod
    def _str(cls, v: Any) -> str:
        return _text(v)


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


# --- usage --------------------------------------------------------------------------------------------
class UsageMeter:
    """LLM usage spent since construction (deltas of ``llm.usage``)."""

    def __init__(self, llm: Any):
        self.llm = llm
        self.start = self._snapshot()

    def _snapshot(self) -> dict[str, float]:
        u = getattr(self.llm, "usage", None)
        keys = ("calls", "prompt_tokens", "completion_tokens", "seconds", "cached_calls")
        return {k: float(getattr(u, k, 0) or 0) for k in keys}

    def report(self) -> UsageReport:
        now = self._snapshot()
        d = {k: now[k] - self.start[k] for k in now}
        return UsageReport(
            calls=int(d["calls"]), prompt_tokens=int(d["prompt_tokens"]),
            completion_tokens=int(d["completion_tokens"]), seconds=round(d["seconds"], 4),
            cached_calls=int(d["cached_calls"]),
        )  # fmt: skip


# --- graph access ---------------------------------------------------------------------------------------
def _vec(v: Any) -> list[float]:
    return np.asarray(v, dtype=np.float32).ravel().tolist()


def retrieve_atomic(
    store: Any, queries: Sequence[str], vectors: Any, *, k: int, threshold: float, exclude: set[str] = frozenset()
) -> list[Candidate]:
    """Line 4 of Algorithm 1: for each query (in order), its top-``k`` atomic questions by cosine similarity
    with similarity >= ``threshold``, best first, each with its chunk (chunks_of_questions.cypher); those
    whose chunk is in ``exclude`` are dropped after the top-k cut."""
    out: list[Candidate] = []
    for query, vec in zip(queries, vectors, strict=True):
        hits = [h for h in store.vector_search("AtomicQuestion", _vec(vec), k=k) if h.score >= threshold]
        if not hits:
            continue
        chunk_of: dict[str, str] = {}
        for row in store.run("retrieve/chunks_of_questions", {"ids": [h.id for h in hits]}):
            chunk_of.setdefault(row["via"], row["chunk_id"])
        for h in hits:
            cid = chunk_of.get(h.id)
            if cid is None or cid in exclude:
                continue
            out.append(
                Candidate(question_id=h.id, text=_text(h.properties.get("text")), chunk_id=cid, score=float(h.score),
                          query=query)
            )  # fmt: skip
    return out


def retrieve_chunks_as_candidates(
    store: Any, embedder: Any, question: str, qvec: Any, *, k: int, threshold: float, exclude: set[str] = frozenset()
) -> list[Candidate]:
    """Backup retrieval 2 (authors' ``retrieve_atom_info_through_chunk``): top-``k`` chunks of the Chunk
    vector index with similarity >= ``threshold``, not in ``exclude``, each represented by its atomic
    question most similar to ``question`` (score = that similarity; a chunk without atomic questions keeps
    its own similarity and its opening words)."""
    hits = [h for h in store.vector_search("Chunk", _vec(qvec), k=k) if h.score >= threshold and h.id not in exclude]
    if not hits:
        return []
    rows = store.run("retrieve/questions_of_chunks", {"ids": [h.id for h in hits]})
    by_chunk: dict[str, list[dict]] = {}
    for row in rows:
        by_chunk.setdefault(row["chunk_id"], []).append(row)
    texts = list(dict.fromkeys(_text(r["text"]) for r in rows))
    sims: dict[str, float] = {}
    if texts:
        vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
        q = np.asarray(qvec, dtype=np.float32).ravel()
        sims = {t: float(s) for t, s in zip(texts, vecs @ q, strict=True)}
    out = []
    for h in hits:
        atoms = by_chunk.get(h.id, [])
        if atoms:
            best = max(atoms, key=lambda r: (sims[_text(r["text"])], r["question_id"]))
            out.append(Candidate(question_id=best["question_id"], text=_text(best["text"]), chunk_id=h.id,
                                 score=sims[_text(best["text"])], query=question))  # fmt: skip
        else:
            text = " ".join(_text(h.properties.get("text")).split())[:200]
            out.append(Candidate(question_id="", text=text, chunk_id=h.id, score=float(h.score), query=question))
    return out


def chunk_details(store: Any, ids: Sequence[str]) -> dict[str, dict]:
    """Provenance rows of chunk_details.cypher by chunk id."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return {}
    return {row["id"]: row for row in store.run("retrieve/chunk_details", {"ids": ids})}


def scored_chunk(row: dict, score: float) -> ScoredChunk:
    return ScoredChunk(
        id=row["id"], score=float(score), text=row.get("text") or "", summary=row.get("summary"),
        kind=row.get("kind") or "text", page=row.get("page"), section_path=row.get("section_path") or "",
        document_id=row.get("document_id") or "", document_title=row.get("document_title") or "",
        document_uri=row.get("document_uri") or "",
    )  # fmt: skip


def context_of(chunks: Sequence[ScoredChunk]) -> str:
    """The chunks as the prompts' context (title and content of each)."""
    return prompts.context_string([(c.document_title, _chunk_body(c)) for c in chunks])


def _chunk_body(c: ScoredChunk) -> str:
    if c.kind == "table" and c.summary:
        return f"{c.summary}\n{c.text}"
    return c.text


def citations_for(chunks: Sequence[ScoredChunk], focus: Sequence[str], embedder: Any) -> list[Citation]:
    """One citation per chunk; quote = the chunk's sentence most similar to its ``focus`` text (the
    selected atomic question, or the question), else its first ~200 characters."""
    from kbgraph.query.ask import sentences

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
                chunk_id=c.id, document=c.document_title or c.document_id, document_uri=c.document_uri,
                section=c.section_path, page=c.page,
                quote=quote if len(quote) <= QUOTE_CHARS else quote[: QUOTE_CHARS - 3] + "...",
            )
        )  # fmt: skip
    return out


def final_answer(llm: Any, question: str, chunks: Sequence[ScoredChunk]) -> QAOutput:
    """Algorithm 1 line 14 (and the RAG baselines): the QA prompt over the chunks. If the LLM gives no
    valid JSON even after the client's repair request, the answer is empty and the rationale says why (the
    authors' parser answers 'parsing error')."""
    try:
        return llm.complete_json(prompts.answer_messages(question, context_of(chunks)), QAOutput)
    except LLMError as exc:
        return QAOutput(answer="", rationale=f"no valid answer JSON from the LLM: {exc}")


# --- Algorithm 1 ------------------------------------------------------------------------------------------
def answer_pike(question: str, *, store, settings, embedder, llm, backup_selection: bool = True) -> Answer:
    """Answer ``question`` by knowledge-aware task decomposition (module docstring). Returns the answer
    with its rationale, one citation per context chunk, the per-round trace and the LLM usage."""
    meter = UsageMeter(llm)
    n_rounds, k, delta = settings.decompose_rounds, settings.decompose_candidates, settings.decompose_threshold
    context: list[ScoredChunk] = []
    focus: list[str] = []
    trace: list[TraceRound] = []
    qvec = None

    for t in range(1, n_rounds + 1):
        rnd = TraceRound(round=t)
        trace.append(rnd)
        ctx = context_of(context)
        # line 3: proposals
        try:
            proposal = llm.complete_json(prompts.proposer_messages(question, ctx), Proposal)
        except LLMError as exc:
            rnd.note = f"stopped: the proposer gave no valid JSON ({exc})"
            break
        rnd.thinking, rnd.proposals = proposal.thinking, proposal.sub_questions
        if not proposal.sub_questions:
            rnd.note = "stopped: no sub-questions proposed"
            break
        # line 4: atomic retrieval, known chunks excluded, then the backups
        exclude = {c.id for c in context}
        vecs = embedder.embed(proposal.sub_questions)
        candidates = retrieve_atomic(store, proposal.sub_questions, vecs, k=k, threshold=delta, exclude=exclude)
        if not candidates:
            qvec = embedder.embed([question])[0] if qvec is None else qvec
            rnd.fallback = "question_atoms"
            candidates = retrieve_atomic(store, [question], [qvec], k=settings.hr_k, threshold=delta, exclude=exclude)
        if not candidates:
            rnd.fallback = "question_chunks"
            candidates = retrieve_chunks_as_candidates(
                store, embedder, question, qvec, k=settings.hr_k, threshold=delta, exclude=exclude
            )
        rnd.candidates = candidates
        if not candidates:
            rnd.note = f"stopped: no atomic question or chunk reaches similarity {delta:g}"
            break
        # line 5: selection (then the backup chunk selection)
        chosen, how = _select(llm, store, question, ctx, candidates, rnd, backup_selection)
        if chosen is None:
            rnd.note = "stopped: nothing selected"
            break
        # lines 10-11: the chunk joins the context
        row = chunk_details(store, [chosen.chunk_id]).get(chosen.chunk_id, {"id": chosen.chunk_id})
        rnd.selected, rnd.chunk_id, rnd.selection = chosen, chosen.chunk_id, how
        context.append(scored_chunk(row, chosen.score))
        focus.append(chosen.text or question)

    # line 14
    out = final_answer(llm, question, context)
    answer = Answer(
        question=question, answer=out.answer, rationale=out.rationale, method="pike", trace=trace,
        chunks=context, citations=citations_for(context, focus, embedder),
    )  # fmt: skip
    answer.usage = meter.report()
    return answer


def _select(
    llm: Any, store: Any, question: str, ctx: str, candidates: list[Candidate], rnd: TraceRound, backup: bool
) -> tuple[Candidate | None, str]:
    """Line 5: the atomic tag selector, then (``backup``) the chunk selector of the authors' code."""
    try:
        sel = llm.complete_json(prompts.selector_messages(question, ctx, [c.text for c in candidates]), Selection)
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
        sel = llm.complete_json(prompts.chunk_selector_messages(question, ctx, paragraphs), ChunkSelection)
    except LLMError as exc:
        rnd.selector_thinking += f"\n(backup chunk selection: no valid JSON: {exc})"
        return None, ""
    rnd.selector_thinking = (rnd.selector_thinking + "\n" + sel.thinking).strip()
    if sel.paragraph_idx is not None and 1 <= sel.paragraph_idx <= len(order):
        return first_of[order[sel.paragraph_idx - 1]], "chunk"
    return None, ""
