"""Asking: validate the question, look the method up in the registry (kbgraph.query.methods.registry) and run it on
a :class:`QueryContext`; with no LLM, answer from retrieval alone.

Answer methods ('auto', the default with an LLM: question classification and level routing, PIKE-RAG §3.2
and §4.2, kbgraph.query.methods.classify; 'pike', Algorithm 1; 'l1'; the baselines 'naive', 'naive_hr', 'cot',
'self_ask', 'self_ask_hr') need an LLM. Retrieval methods ('propagation', layer seeds + score propagation, the default
without an LLM; 'hierarchical', Fig. 11 paths a+b; 'dense'; 'bm25') give a retrieval-only answer. With no LLM
configured, an answer method falls back to 'propagation'. A retrieval-only answer (``retrieval_only``) is
evidence a person can read: the 2-3 sentences or table rows of the top chunks most similar to the question,
one per line, each ending with the marker ``[n]`` of its citation (kbgraph.query.evidence). This is the
retrieval part of PIKE-RAG (§5.2.3) shown as is: no generation, so nothing in the answer is absent from the
cited chunks.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from kbgraph.embed.base import Embedder
from kbgraph.errors import QueryError
from kbgraph.query.answering import UsageMeter
from kbgraph.query.bm25 import load_library as load_bm25
from kbgraph.query.context import QueryContext
from kbgraph.query.evidence import evidence_answer
from kbgraph.query.graph import with_pages
from kbgraph.query.methods.registry import (
    DEFAULT_ANSWER_METHOD,
    DEFAULT_RETRIEVAL_METHOD,
    AnswerRow,
    RetrievalRow,
    get_method,
)
from kbgraph.query.models import Answer, ScoredChunk
from kbgraph.query.propagation.seeding import static_question_vectors
from kbgraph.settings import Settings

MAX_QUESTION_CHARS = 4000


class Question(str):
    """A question that :func:`clean_question` returned: the text every method takes (a ``str``). A front end cleans
    the question once, where its usage error belongs (the CLI before the knowledge base is looked for, the HTTP
    route before the pool is entered, ``KnowledgeBase`` before the store is connected), and passes it on: cleaning
    a ``Question`` again returns it as it is."""

    __slots__ = ()


def clean_question(question: str) -> Question:
    """The question as the methods take it.
    Args:
        question: the question as asked (a :class:`Question` is returned as it is: cleaned already).
    Returns:
        The question without control characters (tab and newline kept) and surrounding white space.
    Raises:
        QueryError: it is no text, empty, only white space or control characters, or longer than
            MAX_QUESTION_CHARS (4,000)."""
    if isinstance(question, Question):
        return question
    if not isinstance(question, str):
        raise QueryError("the question must be text")
    text = "".join(ch for ch in question if ch.isprintable() or ch in "\n\t").strip()
    if not text:
        raise QueryError('the question is empty: ask something, e.g. kbgraph ask "Who founded X?"')
    if len(text) > MAX_QUESTION_CHARS:
        raise QueryError(f"the question has {len(text):,} characters; the limit is {MAX_QUESTION_CHARS:,}")
    return Question(text)


def preload(question: str, settings: Settings, embedder: Embedder) -> None:
    """Load in this process what answering ``question`` loads on first use, before any store is needed: the
    embedder's model and its vector of the question (kept by the embedding cache when it is on), the static
    model's vector (``static_layers``), and bm25s when BM25 is on (``ranker_bm25_k``). ``KnowledgeBase`` runs it
    while its store opens in another thread. The embedder loads in a thread of its own beside the other two (ONNX
    Runtime builds its session without holding the interpreter).
    Args:
        question: the (clean) question.
        settings: the knowledge base's settings (``static_layers``, ``ranker_bm25_k``).
        embedder: the knowledge base's embedder.
    Raises:
        ConfigError: as those loads raise it (also ImportError, ...): the embedder's first."""
    with ThreadPoolExecutor(1, thread_name_prefix="kbgraph-preload") as pool:
        embedding = pool.submit(embedder.embed, [question])
        try:
            static_question_vectors(settings, question)
            if settings.retrieval.ranker_bm25_k:  # the pools' BM25 and the Chunk full-text seeds (every ranker)
                load_bm25()
        finally:
            embedding.result()


def retrieve(
    question: str,
    ctx: QueryContext,
    *,
    k: int,
    method: str | RetrievalRow = DEFAULT_RETRIEVAL_METHOD,
    explain: bool = False,
) -> list[ScoredChunk]:
    """Top-``k`` chunks for the (clean) ``question`` by a retrieval method (kbgraph.query.methods.registry).
    Args:
        question: the clean question (:func:`clean_question`).
        ctx: the knowledge base (store, settings, embedder; the LLM only for auto-tagging's question tags).
        k: the number of chunks.
        method: a retrieval method's name (default 'propagation'), or its row when the caller looked it up.
        explain: with every score term (propagation-based methods).
    Returns:
        At most ``k`` ``ScoredChunk``, best first.
    Raises:
        QueryError: an unknown or non-retrieval method.
        StoreError: the store fails a statement."""
    row = method if isinstance(method, RetrievalRow) else get_method(method, "retrieval")
    return row.run(question, ctx, k=k, explain=explain)


def answer_question(
    question: str,
    ctx: QueryContext,
    *,
    method: str | AnswerRow | RetrievalRow | None = None,
    k: int = 5,
    explain: bool = False,
) -> Answer:
    """Answer ``question`` with ``method`` (see module doc); with no LLM, from retrieval alone.
    Args:
        question: the question (cleaned here unless it is a :class:`Question` already: :func:`clean_question`).
        ctx: the knowledge base (store, settings, embedder, LLM or None).
        method: a method's name, or its row when the caller looked it up; None: 'auto' when ``ctx.llm`` is set,
            else 'propagation'. An answer method
            without an LLM falls back to 'propagation'.
        k: chunks of a retrieval-only answer.
        explain: the chunks' score breakdown (an answer method whose answer has no chunks gets the propagation
            top ``k`` for it).
    Returns:
        The ``Answer``; a retrieval-only one (``retrieval_only``) holds the evidence sentences of the top chunks
            and, as its ``chunks``, the top ``k`` each followed by the further chunks of its page (``same_page``).
    Raises:
        QueryError: an invalid question or an unknown method.
        LLMError: as the answer method raises it (a failing server).
        StoreError: the store fails a statement."""
    question = clean_question(question)
    if isinstance(method, (AnswerRow, RetrievalRow)):
        chosen: AnswerRow | RetrievalRow = method
    else:
        chosen = get_method(method or (DEFAULT_ANSWER_METHOD if ctx.llm is not None else DEFAULT_RETRIEVAL_METHOD))
    if isinstance(chosen, AnswerRow) and ctx.llm is not None:
        answer = chosen.run(question, ctx)
        if explain and not answer.chunks:
            answer.chunks = retrieve(question, ctx, k=k, explain=True)
        return answer
    row = chosen if isinstance(chosen, RetrievalRow) else get_method(DEFAULT_RETRIEVAL_METHOD, "retrieval")
    started, meter = time.perf_counter(), UsageMeter(ctx.llm)  # the LLM's share: question tags (auto-tagging)
    chunks = with_pages(retrieve(question, ctx, k=k, method=row, explain=explain))  # a page's chunks too
    best, citations = evidence_answer(question, chunks, ctx.embedder)
    answer = Answer(
        question=question,
        method=row.name,
        retrieval_only=True,
        chunks=chunks,
        citations=citations,
        answer=best or "No evidence found in the knowledge base.",
    )
    answer.usage = meter.report()
    answer.usage.seconds = round(time.perf_counter() - started, 4)
    return answer
