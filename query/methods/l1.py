"""The L1 system of PIKE-RAG (paper 000, §5.2 "Level-1: Factual Question focused RAG System"; Table 1: "accurate
and reliable answers to factual questions"), method 'l1': multi-granularity retrieval (§5.2.3: every layer's
seeds + score propagation, the retrieval method 'propagation', with the Tag layer of §5.2.2 when auto-tagging
is on) of the top ``settings.routing.l1_k`` chunks, then the question-answering prompt over them (the generation step
of kbgraph.query.answering, the same prompt as Algorithm 1 line 14).

It is the route of factual questions in method 'auto' (kbgraph.query.methods.classify, §4.2). Unlike 'naive' (Chunk
vector index only) and 'naive_hr' (Fig. 11 paths a+b), its context is what ``kbgraph ask`` retrieves without an
LLM, so an L1 answer cites the chunks an offline ask would show.
"""

from __future__ import annotations

from kbgraph.query.answering import UsageMeter, citations_for, final_answer
from kbgraph.query.context import QueryContext
from kbgraph.query.graph import with_pages
from kbgraph.query.models import Answer
from kbgraph.query.methods.retrieval import retrieve_propagation


def answer_l1(question: str, ctx: QueryContext) -> Answer:
    """Method 'l1', PIKE-RAG's L1 system (§5.2): ``question`` answered from its top ``ctx.settings.routing.l1_k``
    chunks by score propagation (§5.2.3) and one QA prompt. In a streamed ask the answer text is streamed as the
    LLM writes it. An unusable answer JSON, or a failing LLM server, gives an empty answer whose rationale says
    why (kbgraph.query.answering.answer_json).
    Args:
        question: the clean question.
        ctx: the knowledge base (store, settings, embedder; ``ctx.llm`` required).
    Returns:
        The ``Answer``: one citation per context chunk (the chunks in rank order, each with its propagated
        score) and the LLM usage; no trace rounds.
    Raises:
        QueryError: ``ctx.llm`` is None.
        StoreError: the store fails a statement."""
    llm = ctx.need_llm()
    meter = UsageMeter(llm)
    chunks = with_pages(retrieve_propagation(question, ctx, k=ctx.settings.routing.l1_k))  # with each page's chunks
    out = final_answer(llm, question, chunks, ctx.events)
    answer = Answer(
        question=question,
        answer=out.answer,
        rationale=out.rationale,
        method="l1",
        chunks=chunks,
        citations=citations_for(chunks, [question] * len(chunks), ctx.embedder),
    )
    answer.usage = meter.report()
    return answer
