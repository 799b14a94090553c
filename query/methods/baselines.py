"""Baselines of PIKE-RAG §6.1 (paper 000) and KAR³ §4 / Appendix A.2-A.3 (paper 003), on the same graph
and with the same embedder as method 'pike' (kbgraph.query.methods.decompose):

* 'cot'      Zero-Shot CoT: the question alone, no retrieval (prompts.COT).
* 'naive'    Naive RAG w/ R: the Chunk vector index only, up to ``naive_k`` (16) chunks with cosine >=
             ``naive_threshold`` (0.2) (003 A.3: "fetch up to 16 knowledge chunks, applying a retrieval score
             threshold of 0.2"), then the QA prompt (prompts.ANSWER).
* 'naive_hr' Naive RAG w/ H-R: Fig. 11 paths (a) and (b) with the original question: up to ``hr_k`` (8)
             chunks from the Chunk index at cosine >= ``hr_threshold`` (0.5) plus the chunks of up to
             ``hr_question_k`` (4) atomic questions at cosine >= ``hr_question_threshold`` (0.5), path (a)
             chunks first, then the new path (b) chunks (authors' ``ChunkAtomRetriever.
             retrieve_contents_by_query``; kbgraph.query.methods.hierarchical, also method 'hierarchical').
* 'self_ask' Self-Ask w/ R (Press et al. 2023; prompts.SELF_ASK): the LLM continues "Are follow up questions
             needed here:"; each "Follow up:" retrieves SELF_ASK_CHUNKS (4) chunks from the Chunk index at
             cosine >= ``naive_threshold`` (003 A.3: "retrieves 4 relevant chunks per request, maintaining
             the same score threshold of 0.2") and is answered by the QA prompt over them ("Intermediate
             answer:"); "So the final answer is:" ends it, and after ``self_ask_rounds`` follow-ups the final
             answer is asked for directly. The retrieved chunks are accumulated as the citations.
             ``self_ask_rounds`` is 5, the N of 003 §4.1 ("the iteration number N is set to 5 for Self-Ask
             with Retrieval").
* 'self_ask_hr' Self-Ask w/ H-R (PIKE-RAG §6.1: follow-up questions "are employed as queries in a dual-path
             retrieval system, specifically paths (a) and (b) in Figure 11"): as 'self_ask', but each follow-up
             retrieves as 'naive_hr' does with the question (``hr_k`` chunks at ``hr_threshold`` by path (a),
             the chunks of ``hr_question_k`` atomic questions at ``hr_question_threshold`` by path (b);
             kbgraph.query.methods.hierarchical); a chunk of path (b) alone is cited for its best atomic question.

In a streamed ask (``ctx.events``) the final answers of 'cot', 'naive' and 'naive_hr' are streamed as the LLM
writes them; Self-Ask's (both) comes whole at the end (kbgraph.query.streaming). Every method returns an
:class:`Answer` with ``method`` set, citations with provenance from
``cypher/retrieve/chunk_details.cypher`` and usage from ``llm.usage`` deltas.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kbgraph.embed.base import Embedder
from kbgraph.query import prompts
from kbgraph.query.answering import QAOutput, UsageMeter, answer_json, citations_for, final_answer
from kbgraph.query.context import QueryContext
from kbgraph.query.graph import chunks_by_vector
from kbgraph.query.methods.hierarchical import hierarchical_chunks
from kbgraph.query.models import Answer, Candidate, ScoredChunk, TraceRound

#: Chunks retrieved per Self-Ask follow-up question (003 Appendix A.3).
SELF_ASK_CHUNKS = 4

_FOLLOW = re.compile(r"Follow up:\s*(.*)", re.IGNORECASE)
_FINAL = re.compile(r"So the final answer is:\s*(.*)", re.IGNORECASE | re.DOTALL)
_INTERMEDIATE = re.compile(r"Intermediate answer:", re.IGNORECASE)


def _answer(
    question: str,
    method: str,
    out: QAOutput,
    chunks: list[ScoredChunk],
    embedder: Embedder,
    meter: UsageMeter,
    trace: list[TraceRound] | None = None,
    focus: list[str] | None = None,
) -> Answer:
    answer = Answer(
        question=question,
        answer=out.answer,
        rationale=out.rationale,
        method=method,
        chunks=chunks,
        trace=trace or [],
        citations=citations_for(chunks, focus or [question] * len(chunks), embedder),
    )
    answer.usage = meter.report()
    return answer


def answer_cot(question: str, ctx: QueryContext) -> Answer:
    """Method 'cot': Zero-Shot CoT (PIKE-RAG §6.1 baselines), no retrieval, no citations. An unusable answer JSON,
    or a failing LLM server, gives an empty answer whose rationale says why (kbgraph.query.answering.answer_json).
    Args:
        question: the clean question.
        ctx: the knowledge base (``ctx.llm`` required).
    Returns:
        The ``Answer`` (``method`` 'cot') with the LLM usage.
    Raises:
        QueryError: ``ctx.llm`` is None."""
    embedder, llm = ctx.embedder, ctx.need_llm()
    meter = UsageMeter(llm)
    return _answer(question, "cot", answer_json(llm, prompts.cot_messages(question), ctx.events), [], embedder, meter)


def answer_naive(question: str, ctx: QueryContext) -> Answer:
    """Method 'naive': Naive RAG over flat chunks (PIKE-RAG §6.1): ``naive_k`` chunks at cosine >=
    ``naive_threshold``, then the QA prompt. An unusable answer JSON, or a failing LLM server, gives an empty
    answer whose rationale says why (kbgraph.query.answering.answer_json).
    Args:
        question: the clean question.
        ctx: the knowledge base (store, settings, embedder; ``ctx.llm`` required).
    Returns:
        The ``Answer`` (``method`` 'naive'): citations of the chunks, the LLM usage.
    Raises:
        QueryError: ``ctx.llm`` is None.
        StoreError: the store fails a statement."""
    store, settings, embedder, llm = ctx.store, ctx.settings, ctx.embedder, ctx.need_llm()
    meter = UsageMeter(llm)
    qvec = embedder.embed([question])[0]
    chunks = chunks_by_vector(store, qvec, k=settings.baselines.naive_k, threshold=settings.baselines.naive_threshold)
    return _answer(question, "naive", final_answer(llm, question, chunks, ctx.events), chunks, embedder, meter)


def answer_naive_hr(question: str, ctx: QueryContext) -> Answer:
    """Naive RAG with hierarchical retrieval: Fig. 11's union of path (a) ``hr_k`` chunks at cosine >=
    ``hr_threshold`` and path (b) the chunks of ``hr_question_k`` atomic questions at cosine >=
    ``hr_question_threshold`` (kbgraph.query.methods.hierarchical, the retrieval of method 'hierarchical'; PIKE-RAG §6.1).
    An unusable answer JSON, or a failing LLM server, gives an empty answer whose rationale says why
    (kbgraph.query.answering.answer_json).
    Args:
        question: the clean question.
        ctx: the knowledge base (store, settings, embedder; ``ctx.llm`` required).
    Returns:
        The ``Answer`` (``method`` 'naive_hr'): citations of the union's chunks (a chunk of path (b) alone cited for
        its best atomic question), one trace round naming the paths' counts, the LLM usage.
    Raises:
        QueryError: ``ctx.llm`` is None.
        StoreError: the store fails a statement."""
    store, settings, embedder, llm = ctx.store, ctx.settings, ctx.embedder, ctx.need_llm()
    meter = UsageMeter(llm)
    qvec = embedder.embed([question])[0]
    chunks, via_questions, from_a = hierarchical_chunks(store, settings, question, qvec)
    best = {c.chunk_id: c for c in reversed(via_questions)}  # each chunk's best atomic question
    focus = [question] * from_a + [best[c.id].text or question for c in chunks[from_a:]]
    for c in chunks:
        c.breakdown = []
    trace = [
        TraceRound(
            round=1,
            proposals=[question],
            candidates=via_questions,
            note=f"path (a): {from_a} chunks; path (b): {len(via_questions)} atomic questions, "
            f"{len(chunks) - from_a} new chunks",
        )
    ]
    out = final_answer(llm, question, chunks, ctx.events)
    return _answer(question, "naive_hr", out, chunks, embedder, meter, trace, focus)


def parse_self_ask(text: str) -> tuple[str | None, str | None]:
    """The follow-up question or the final answer of a Self-Ask continuation; the text after the first
    "Intermediate answer:" is ignored (the authors stop generation there).
    Args:
        text: the LLM's continuation.
    Returns:
        (follow-up question, None), (None, final answer), or (None, None) when it holds neither."""
    text = _INTERMEDIATE.split(text or "", maxsplit=1)[0]
    follow = _FOLLOW.search(text)
    if follow and follow.group(1).strip():
        return follow.group(1).strip().splitlines()[0].strip(), None
    final = _FINAL.search(text)
    if final and final.group(1).strip():
        return None, final.group(1).strip()
    return None, None


#: What a Self-Ask follow-up retrieves: (chunks, trace candidates, each chunk's citation focus by id).
_Found = tuple[list[ScoredChunk], list[Candidate], dict[str, str]]


def _flat_followup(follow: str, qvec: Any, ctx: QueryContext) -> _Found:
    """Self-Ask w/ R: SELF_ASK_CHUNKS chunks of the Chunk vector index at cosine >= ``naive_threshold``."""
    found = chunks_by_vector(ctx.store, qvec, k=SELF_ASK_CHUNKS, threshold=ctx.settings.baselines.naive_threshold)
    candidates = [
        Candidate(question_id="", text=c.text[:200], chunk_id=c.id, score=c.score, query=follow) for c in found
    ]
    return found, candidates, {c.id: follow for c in found}


def _hierarchical_followup(follow: str, qvec: Any, ctx: QueryContext) -> _Found:
    """Self-Ask w/ H-R: Fig. 11's paths (a) and (b) with the follow-up (kbgraph.query.methods.hierarchical, as
    'naive_hr' with the question): path (a)'s chunks as candidates, then path (b)'s atomic questions; a chunk
    reached by path (b) alone is cited for its best atomic question."""
    found, atoms, from_a = hierarchical_chunks(ctx.store, ctx.settings, follow, qvec)
    best = {a.chunk_id: a for a in reversed(atoms)}
    focus = {c.id: follow for c in found[:from_a]}
    focus.update({c.id: best[c.id].text or follow for c in found[from_a:]})
    for c in found:
        c.breakdown = []
    candidates = [
        Candidate(question_id="", text=c.text[:200], chunk_id=c.id, score=c.score, query=follow) for c in found[:from_a]
    ]
    candidates += atoms  # each with query = the follow-up
    return found, candidates, focus


def answer_self_ask(question: str, ctx: QueryContext) -> Answer:
    """Method 'self_ask', Self-Ask with retrieval (PIKE-RAG §6.1; module docstring): each follow-up question is
    answered from its retrieved chunks (flat: the Chunk vector index), at most ``self_ask_rounds`` of them.
    Args:
        question: the clean question.
        ctx: the knowledge base (store, settings, embedder; ``ctx.llm`` required).
    Returns:
        The ``Answer`` (``method`` 'self_ask'): the follow-ups and intermediate answers as rationale, one trace
        round per follow-up, citations of every retrieved chunk, the LLM usage.
    Raises:
        QueryError: ``ctx.llm`` is None.
        LLMError: the LLM server fails (a continuation is a plain completion).
        StoreError: the store fails a statement."""
    return _self_ask(question, ctx, "self_ask", _flat_followup)


def answer_self_ask_hr(question: str, ctx: QueryContext) -> Answer:
    """Method 'self_ask_hr', Self-Ask with hierarchical retrieval (PIKE-RAG §6.1 "Self-Ask w/ H-R"): each
    follow-up question retrieves through Fig. 11's paths (a) and (b) (``hr_*`` settings) and is answered from
    the union.
    Args:
        question: the clean question.
        ctx: the knowledge base (store, settings, embedder; ``ctx.llm`` required).
    Returns:
        The ``Answer`` (``method`` 'self_ask_hr'), as :func:`answer_self_ask`'s.
    Raises:
        QueryError: ``ctx.llm`` is None.
        LLMError: the LLM server fails (a continuation is a plain completion).
        StoreError: the store fails a statement."""
    return _self_ask(question, ctx, "self_ask_hr", _hierarchical_followup)


def _self_ask(
    question: str, ctx: QueryContext, method: str, retrieve: Callable[[str, Any, QueryContext], _Found]
) -> Answer:
    settings, embedder, llm = ctx.settings, ctx.embedder, ctx.need_llm()
    meter = UsageMeter(llm)
    followups: list[tuple[str, str]] = []
    trace: list[TraceRound] = []
    chunks: dict[str, ScoredChunk] = {}
    focus: dict[str, str] = {}
    final: str | None = None
    for t in range(1, settings.baselines.self_ask_rounds + 1):
        reply = llm.complete(prompts.self_ask_messages(question, followups, final=False))
        follow, final = parse_self_ask(reply)
        if follow is None:
            break
        qvec = embedder.embed([follow])[0]
        found, candidates, found_focus = retrieve(follow, qvec, ctx)
        out = final_answer(llm, follow, found)
        followups.append((follow, out.answer))
        for c in found:
            if c.id not in chunks:
                chunks[c.id], focus[c.id] = c, found_focus.get(c.id, follow)
        trace.append(
            TraceRound(
                round=t,
                proposals=[follow],
                thinking=out.rationale,
                note=f"intermediate answer: {out.answer}",
                candidates=candidates,
            )
        )
    if final is None:
        reply = llm.complete(prompts.self_ask_messages(question, followups, final=True))
        final = parse_self_ask(reply)[1] or _INTERMEDIATE.split(reply, maxsplit=1)[0]
    final = next((line.strip() for line in final.strip().splitlines() if line.strip()), "")
    rationale = "\n".join(f"Follow up: {q}\nIntermediate answer: {a}" for q, a in followups)
    used = list(chunks.values())
    out = QAOutput(answer=final, rationale=rationale)
    return _answer(question, method, out, used, embedder, meter, trace, [focus[c.id] for c in used])
