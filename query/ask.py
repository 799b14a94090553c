"""Answering: validate the question, pick the method, and (with no LLM) answer from retrieval alone.

Methods: 'pike' (knowledge-aware task decomposition, Algorithm 1; the default with an LLM), 'naive',
'naive_hr', 'self_ask', 'cot' (baselines), and the retrieval methods 'hierarchical' (layer seeds + score
propagation; the default without an LLM) and 'dense' (Chunk vector top-k only). With no LLM configured, an
LLM method falls back to 'hierarchical' and the answer is the evidence sentence most similar to the
question, marked ``retrieval_only``.
"""

from __future__ import annotations

import re
import time
from typing import Any

import numpy as np

from kbgraph.errors import QueryError
from kbgraph.query.models import Answer, Citation
from kbgraph.query.propagation import ScoredChunk, propagate, seed_layers

MAX_QUESTION_CHARS = 4000
LLM_METHODS = ("pike", "naive", "naive_hr", "self_ask", "cot")
RETRIEVAL_METHODS = ("hierarchical", "dense")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def clean_question(question: str) -> str:
    """The question with surrounding white space removed. Raises QueryError if it is empty, only white
    space, has control characters only, or is longer than MAX_QUESTION_CHARS."""
    if not isinstance(question, str):
        raise QueryError("the question must be text")
    text = "".join(ch for ch in question if ch.isprintable() or ch in "\n\t").strip()
    if not text:
        raise QueryError("the question is empty: ask something, e.g. kbgraph ask \"Who founded X?\"")
    if len(text) > MAX_QUESTION_CHARS:
        raise QueryError(f"the question has {len(text):,} characters; the limit is {MAX_QUESTION_CHARS:,}")
    return text


def dense_settings(settings):
    """``settings`` with every propagation term but the chunk's own similarity switched off."""
    return settings.model_copy(
        update={"weight_hop": 0.0, "weight_title_hop": 0.0, "weight_next": 0.0, "weight_fulltext": 0.0}
    )


def retrieve(store, settings, embedder, question: str, *, k: int, method: str = "hierarchical",
             explain: bool = False) -> list[ScoredChunk]:  # fmt: skip
    """Top-``k`` chunks for ``question``: 'hierarchical' = every layer's seeds + score propagation
    (kbgraph.query.propagation), 'dense' = the Chunk vector index alone (same embedder)."""
    qvec = embedder.embed([question])[0].tolist()
    if method == "dense":
        seeds = seed_layers(store, settings, question, qvec, layers=["Chunk"])
        flat = dense_settings(settings)
        return propagate(store, flat, seeds, k=k, explain=explain)
    seeds = seed_layers(store, settings, question, qvec)
    return propagate(store, settings, seeds, k=k, explain=explain)


def answer_question(question: str, *, store, settings, embedder, llm: Any = None, method: str | None = None,
                    k: int = 5, explain: bool = False) -> Answer:  # fmt: skip
    """Answer ``question`` with ``method`` (see module doc). Raises QueryError for an invalid question or
    method."""
    question = clean_question(question)
    method = method or ("pike" if llm is not None else "hierarchical")
    if method not in LLM_METHODS + RETRIEVAL_METHODS:
        raise QueryError(f"unknown method {method!r}; choose one of {', '.join(LLM_METHODS + RETRIEVAL_METHODS)}")
    if method in LLM_METHODS and llm is not None:
        from kbgraph.query import baselines, decompose

        fn = {
            "pike": decompose.answer_pike, "naive": baselines.answer_naive, "naive_hr": baselines.answer_naive_hr,
            "self_ask": baselines.answer_self_ask, "cot": baselines.answer_cot,
        }[method]  # fmt: skip
        answer = fn(question, store=store, settings=settings, embedder=embedder, llm=llm)
        if explain and not answer.chunks:
            answer.chunks = retrieve(store, settings, embedder, question, k=k, explain=True)
        return answer
    retrieval = "dense" if method == "dense" else "hierarchical"
    started = time.perf_counter()
    chunks = retrieve(store, settings, embedder, question, k=k, method=retrieval, explain=explain)
    best, citations = _evidence(question, chunks, embedder)
    answer = Answer(
        question=question, method=retrieval, retrieval_only=True, chunks=chunks, citations=citations,
        answer=best or "No evidence found in the knowledge base.",
    )  # fmt: skip
    answer.usage.seconds = round(time.perf_counter() - started, 4)
    return answer


def sentences(text: str) -> list[str]:
    """Split text into sentences (regex; cheap, good enough for quoting)."""
    parts = []
    for para in re.split(r"\n\s*\n|\n(?=[#|*-])", text):
        parts += [s.strip() for s in _SENTENCE.split(para) if s.strip()]
    return parts


def evidence_units(chunk: ScoredChunk, limit: int = 60) -> list[str]:
    """The quotable units of a chunk: its sentences, or for a table its rows written as 'header: value'
    pairs (so that a row embeds with its column names)."""
    if chunk.kind == "table":
        from kbgraph.ingest.tables import parse_markdown_table

        _caption, header, rows = parse_markdown_table(chunk.text)
        units = []
        for row in rows[:limit]:
            pairs = [f"{h}: {v}" if h else v for h, v in zip(header, row, strict=False) if v]
            if pairs:
                units.append("; ".join(pairs))
        if units:
            return units
    return sentences(chunk.text)[:limit] or [chunk.text[:300]]


def _evidence(question: str, chunks: list[ScoredChunk], embedder) -> tuple[str, list[Citation]]:
    """The sentence of the top chunks most similar to the question, and one citation per chunk whose quote
    is its own best sentence."""
    if not chunks:
        return "", []
    per_chunk = [evidence_units(c) for c in chunks]
    flat = [s for group in per_chunk for s in group]
    vecs = embedder.embed([question, *flat])
    q, svecs = vecs[0], vecs[1:]
    sims = svecs @ q
    citations, best, best_sim, i = [], "", -2.0, 0
    for rank, (chunk, group) in enumerate(zip(chunks, per_chunk, strict=True)):
        local = sims[i : i + len(group)]
        j = int(np.argmax(local))
        quote = group[j]
        # the answer comes from the top chunks, weighted toward the best-ranked one
        weighted = float(local[j]) - 0.02 * rank
        if rank < 3 and weighted > best_sim:
            best, best_sim = quote, weighted
        i += len(group)
        if any(c.quote == quote[:400] and c.document == chunk.document_title for c in citations):
            continue  # overlapping chunks: one citation per quote
        citations.append(
            Citation(
                chunk_id=chunk.id, document=chunk.document_title, document_uri=chunk.document_uri,
                section=chunk.section_path, page=chunk.page, quote=quote[:400],
            )
        )  # fmt: skip
    return best, citations
