"""HiRAG, method 'hirag': Hierarchical Retrieval-Augmented Generation with Rethink (paper 004 §4, Algorithm 1 of
its appendix A.2), on the same graph, embedder and LLM as 'pike' (kbgraph.query.methods.decompose) and the baselines.

    A = []; Q = []                                                    sub-answers, sub-questions
    for w = 1..W:                                                     W = settings.hirag.hirag_rounds (5, 004 A.1)
        q <- Decomposer(x, A)                                         §4.2 eq. 1, prompts.hirag.DECOMPOSER
        if Definer(q) ("That's enough") or q in Q: stop               eq. 1; Algorithm 1 line 39
        e <- LLM(q)                                                   §4.3 eq. 3, ENTITY
        D <- documents whose title / mentioned entity matches e       document level (kbgraph.query.methods.hirag_retrieve)
        if more than th1 titles match e exactly:                      tie, Algorithm 1 lines 20-22
            q* <- LLM(q, a_i) for an a_i naming e, else LLM(q, x)     rewrite, eq. 4 (DESCRIBE / REWRITE)
            a <- fallback(q*)
        else for t = 1, 2, ...:                                       Filter (§4.4), single-candidate retrieval
            c <- the next chunk of the current document by cosine     chunk level, eq. 5
            r <- LLM(q, c); if Verify(q, r) = yes: a <- r; break       eq. 6, SUB_ANSWER + VERIFY
            if t >= th3: a <- fallback(q); break                      give up (line 33)
            if t mod th2 = 0: next document, else next chunk          rethink: document / chunk level (line 30)
        A <- A + [a]; Q <- Q + [q]
    o <- Summarizer(x, A)                                             §4.2 eq. 2, SUMMARIZER

The fallback. The paper searches the web when the sub-question was rewritten (Google, Algorithm 1 line 13), and
the authors' code falls back to dense retrieval over the whole corpus when the rethinks give up. A closed
knowledge base has no web: both become the graph's own retrieval over the whole knowledge base, score
propagation (kbgraph.query.methods.retrieval ``retrieve_propagation``, PIKE-RAG §5.2.3), whose best chunks not tried
yet are offered one at a time with the same Filter, at most th2 of them (a chunk-level rethink over that
ranking). It also runs when no document matches the entity (the authors' "correlation is too low").

Departures from the paper and the authors' code, each for a reason:

* Each LLM judgement is asked once; the authors sample the Decomposer six times, Verify five times, the
  sub-answer and the Summarizer three times or more, and vote (self-consistency): the calls would multiply.
* No Profile Wikicorpus (p* of eq. 3): a knowledge base has no entity profiles.
* No internal-knowledge answer with probability (t/m)² (§4.4 eq. 7): it is random, and its answer could cite
  nothing; a sub-question no chunk answers gets "" (Algorithm 1 line 35) and the Decomposer is told it is
  unanswered (its workflow step 2.1: "rephrase a simple question").
* The Definer is eq. 1's ``Judge = Definer(q_mt)``: the Decomposer's output says "That's enough".

Thresholds: th1 ``settings.hirag.hirag_th1`` (1), th2 ``hirag_th2`` (3), th3 ``hirag_th3`` (4) and the match floor
``hirag_min_match`` (0.8); the settings say where each value comes from. A document with fewer chunks than th2
gives way to the next one when its chunks run out; the try count goes on.

Citations: the verified chunks, in round order, each quoting its sentence most similar to its sub-answer.
Usage counts every LLM call (Decomposer, entity, sub-answer, Verify, rewrite, Summarizer; tagging inside the
fallback's retrieval when ``auto_tagging`` is on). In a streamed ask (``ctx.events``) each round is sent when
it ends and the Summarizer's answer text as the LLM writes it.
"""

from __future__ import annotations

import re

from kbgraph.llm.base import LLM
from kbgraph.query import prompts
from kbgraph.query.answering import UsageMeter, answer_json, citations_for
from kbgraph.query.context import QueryContext
from kbgraph.query.graph import chunk_details, scored_chunk
from kbgraph.query.methods.hirag_retrieve import DocumentMatch, document_candidates, document_chunks, tied
from kbgraph.query.models import Answer, HiragRound, ScoredChunk
from kbgraph.query.prompts import hirag as hp
from kbgraph.query.methods.retrieval import retrieve_propagation
from kbgraph.store.base import Row
from kbgraph.text import chunk_body

Attempt = HiragRound.HiragAttempt

_ENOUGH = re.compile(r"\bthat(?:'|’|\s+i)?s\s+enough\b|\bthat\s+is\s+enough\b", re.I)
_SUB_PREFIX = re.compile(r"^\s*(?:[-*]\s*)?(?:\d+\s*(?:st|nd|rd|th)\s+)?(?:simple\s+)?question\s*:\s*", re.I)
_OUTPUT_LABEL = re.compile(r"^\s*#*\s*output\s*:\s*", re.I)
_ANSWER_MARK = re.compile(r"answer the question\s*:?", re.I)
#: Documents listed per round in the trace.
TRACE_DOCUMENTS = 5


def definer(output: str) -> bool:
    """The Definer (§4.2 eq. 1): whether the Decomposer's output says the question can now be answered
    ("That's enough"; the authors' code tests for " enough")."""
    return bool(_ENOUGH.search(output))


def sub_question_of(output: str) -> str:
    """The sub-question in the Decomposer's output: its first non-empty line without a "1st Simple Question:"
    style prefix, spacing collapsed."""
    return _first_line(output, _SUB_PREFIX, " \"'")


def entity_of(output: str) -> str:
    """The entity in the answer to ``prompts.hirag.ENTITY``: its first non-empty line without an "##output:"
    label, quotes or final full stop."""
    return _first_line(output, _OUTPUT_LABEL, " \"'`.")


def _first_line(output: str, prefix: re.Pattern[str], chars: str) -> str:
    for line in output.splitlines():
        line = " ".join(prefix.sub("", line).split()).strip(chars)
        if line:
            return line
    return ""


def sub_answer_of(response: str) -> str:
    """The answer part of the Filter's response r (authors' ``exact_answer``): the text after its last
    "Answer the Question", list dashes dropped, on one line; else the whole response on one line."""
    parts = _ANSWER_MARK.split(response)
    tail = parts[-1] if len(parts) > 1 and parts[-1].strip() else response
    return " ".join(line.strip().lstrip("-* ").strip() for line in tail.splitlines() if line.strip())


def _key(text: str) -> str:
    return " ".join(text.lower().split()).rstrip("?.! ")


# --- Algorithm 1 ``Main`` ------------------------------------------------------------------------------------
def answer_hirag(question: str, ctx: QueryContext) -> Answer:
    """Method 'hirag': ``question`` answered with HiRAG (paper 004 §4; module docstring).
    Args:
        question: the clean question.
        ctx: the knowledge base (store, settings, embedder; ``ctx.llm`` required).
    Returns:
        The ``Answer`` with one :class:`HiragRound` per Decomposer call, citations of the verified chunks and
        the LLM usage of every call.
    Raises:
        QueryError: ``ctx.llm`` is None.
        LLMError: the LLM server fails.
        StoreError: the store fails a statement."""
    settings, llm = ctx.settings, ctx.need_llm()
    meter = UsageMeter(llm)
    trace: list[HiragRound] = []
    turns: list[tuple[str, str]] = []  # (sub-question, sub-answer), the Decomposer's conversation
    verified: list[ScoredChunk] = []
    focus: list[str] = []

    for w in range(1, settings.hirag.hirag_rounds + 1):
        ctx.round_finished(trace)
        rnd = HiragRound(round=w)
        trace.append(rnd)
        output = llm.complete(hp.decomposer_messages(question, turns)).strip()
        rnd.decomposer_output = output
        if definer(output):
            rnd.stop = "enough"
            break
        rnd.sub_question = sub_question_of(output)
        if not rnd.sub_question:
            rnd.stop = "empty"
            break
        if _key(rnd.sub_question) in {_key(q) for q, _ in turns}:
            rnd.stop = "repeat"
            break
        chunk = _retrieve(ctx, question, rnd, [a for _, a in turns])
        turns.append((rnd.sub_question, rnd.answer))
        if chunk is not None and chunk.id not in {c.id for c in verified}:
            verified.append(chunk)
            focus.append(rnd.answer or rnd.sub_question)
    else:
        trace[-1].note = (
            trace[-1].note + "; " if trace[-1].note else ""
        ) + f"{settings.hirag.hirag_rounds} rounds: stop"

    ctx.round_finished(trace)
    out = answer_json(llm, hp.summarizer_messages(question, [a for _, a in turns]), ctx.events)
    answer = Answer(
        question=question,
        answer=out.answer,
        rationale=out.rationale,
        method="hirag",
        trace=trace,
        chunks=verified,
        citations=citations_for(verified, focus, ctx.embedder),
    )
    answer.usage = meter.report()
    return answer


# --- Algorithm 1 ``Retrieval`` and ``RewriteAndAnswerQuestion`` ------------------------------------------------
def _retrieve(ctx: QueryContext, question: str, rnd: HiragRound, answers: list[str]) -> ScoredChunk | None:
    """The Retriever and the Filter for ``rnd.sub_question``: fills ``rnd`` and returns the verified chunk (its
    response is ``rnd.answer``), or None."""
    settings, llm, q = ctx.settings, ctx.need_llm(), rnd.sub_question
    rnd.entity = entity_of(llm.complete(hp.entity_messages(q))) or q
    docs = document_candidates(ctx.store, rnd.entity, min_match=settings.hirag.hirag_min_match)
    rnd.documents = [
        HiragRound.HiragDocument(
            document_id=d.document_id, title=d.title, match=round(d.match, 4), via=d.via, name=d.name
        )
        for d in docs[:TRACE_DOCUMENTS]
    ]
    tie = tied(docs, settings.hirag.hirag_th1)
    if tie:
        rnd.tie = [d.title for d in tie]
        rnd.rewrite, rnd.rewrite_from = _rewrite(llm, question, q, rnd.entity, answers)
        return _fallback(ctx, rnd, "tie", rnd.rewrite, 1)
    if not docs:
        return _fallback(ctx, rnd, "no_document", q, 1)
    return _rethink_loop(ctx, rnd, docs)


def _rethink_loop(ctx: QueryContext, rnd: HiragRound, docs: list[DocumentMatch]) -> ScoredChunk | None:
    """Single-candidate retrieval with the two-tiered rethink (§4.4; Algorithm 1 lines 17-36)."""
    th2, th3 = ctx.settings.hirag.hirag_th2, ctx.settings.hirag.hirag_th3
    qvec = ctx.embedder.embed([rnd.sub_question])[0]
    d, c, t, level = 0, 0, 0, "first"
    ranked: list[tuple[str, float]] | None = None
    while True:
        if d >= len(docs):
            return _fallback(ctx, rnd, "gave_up", rnd.sub_question, t + 1)
        if ranked is None:
            ranked = document_chunks(ctx.store, docs[d].document_id, qvec)
        if c >= len(ranked):  # the document has no chunk left: the document-level rethink comes early
            d, c, ranked, level = d + 1, 0, None, "document"
            rnd.rethink = "document"
            continue
        t += 1
        if d < len(rnd.documents):
            rnd.documents[d].tried = True
        chunk_id, score = ranked[c]
        chunk = _try(ctx, rnd, Attempt(t=t, level=level, chunk_id=chunk_id, score=round(score, 6)))
        if chunk is not None:
            return chunk
        if t >= th3:
            return _fallback(ctx, rnd, "gave_up", rnd.sub_question, t + 1)
        if t % th2 == 0:
            d, c, ranked, level = d + 1, 0, None, "document"
            rnd.rethink = "document"
        else:
            c, level = c + 1, "chunk"
            rnd.rethink = rnd.rethink or "chunk"


def _try(ctx: QueryContext, rnd: HiragRound, attempt: Attempt, row: Row | None = None) -> ScoredChunk | None:
    """One try of the Filter: r = LLM(q, c) (eq. 6), then Verify(q, r). Appends ``attempt`` to ``rnd``; on yes
    sets ``rnd.answer`` / ``rnd.chunk_id`` and returns the chunk."""
    llm = ctx.need_llm()
    if row is None:
        row = chunk_details(ctx.store, [attempt.chunk_id]).get(attempt.chunk_id, {"id": attempt.chunk_id})
    chunk = scored_chunk(row, attempt.score)
    attempt.document_id, attempt.document_title = chunk.document_id, chunk.document_title
    knowledge = prompts.context_string([(chunk.document_title, chunk_body(chunk.kind, chunk.text, chunk.summary))])
    response = llm.complete(hp.sub_answer_messages(rnd.sub_question, knowledge))
    attempt.response = sub_answer_of(response)
    attempt.verdict = " ".join(llm.complete(hp.verify_messages(rnd.sub_question, attempt.response)).split())[:200]
    attempt.verified = "yes" in attempt.verdict.lower()  # the authors' test
    rnd.attempts.append(attempt)
    if not attempt.verified:
        return None
    rnd.answer, rnd.chunk_id = attempt.response, chunk.id
    return chunk


def _rewrite(llm: LLM, question: str, sub_question: str, entity: str, answers: list[str]) -> tuple[str, str]:
    """q* (eq. 4; Algorithm 1 lines 6-12): with the first earlier sub-answer naming the entity, the sub-question
    followed by the entity's description from that answer (the authors' code); else the sub-question rewritten
    with the original question. Returns (q*, 'answer' | 'question')."""
    key = entity.lower()
    for a in answers:
        if key and key in a.lower():
            description = " ".join(llm.complete(hp.describe_messages(entity, a)).split())
            return f"{sub_question} {description}".strip(), "answer"
    rewritten = sub_question_of(llm.complete(hp.rewrite_messages(question, sub_question)))
    return rewritten or sub_question, "question"


def _fallback(ctx: QueryContext, rnd: HiragRound, why: str, query: str, t: int) -> ScoredChunk | None:
    """The web search's stand-in (module docstring): propagation retrieval over the whole knowledge base for
    ``query``; its best chunks not tried in this round are offered one at a time, at most th2."""
    rnd.fallback, rnd.fallback_query = why, query
    th2 = ctx.settings.hirag.hirag_th2
    tried = {a.chunk_id for a in rnd.attempts}
    hits = [h for h in retrieve_propagation(query, ctx, k=th2 + len(tried)) if h.id not in tried][:th2]
    for i, hit in enumerate(hits):
        attempt = Attempt(t=t + i, level="fallback", chunk_id=hit.id, score=round(hit.score, 6))
        chunk = _try(ctx, rnd, attempt, hit.model_dump())
        if chunk is not None:
            return chunk
    rnd.note = "no chunk verified" if hits else "the fallback retrieval found nothing"
    return None
