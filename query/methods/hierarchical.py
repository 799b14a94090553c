"""Hierarchical retrieval of PIKE-RAG Fig. 11 (paper 000 §5.3.1; hyper-parameters §6.1 and paper 003 A.3): method
'hierarchical' (retrieval only) and the retrieval of the baseline 'naive_hr' (kbgraph.query.methods.baselines).

The question's vector goes down two paths of the hierarchical knowledge base, and their chunks are united:

* path (a), question -> chunks: the top ``hr_k`` (8) chunks of the Chunk vector index with cosine >=
  ``hr_threshold`` (0.5) (§6.1: "the retriever is initially set to retrieve a maximum of 8 chunks with a more
  stringent threshold of 0.5");
* path (b), question -> atomic questions -> chunks: the top ``hr_question_k`` (4) atomic questions of the
  AtomicQuestion vector index with cosine >= ``hr_question_threshold`` (0.5), each leading to its chunk
  (§6.1: "an additional 4 chunks can be retrieved via each atomic query posed"; 003 A.3: "4 relevant atomic
  tags for each atomic query but with a higher threshold 0.5").

Aggregation, as the authors' ``ChunkAtomRetriever.retrieve_contents_by_query``: path (a)'s chunks best first,
then each chunk of path (b) not already there, in the order of its best atomic question. So the union holds at
most ``hr_k + hr_question_k`` chunks; a chunk's score is its path (a) cosine, or for a chunk of path (b) alone
the cosine of its best atomic question (scores are therefore not monotone across the two parts). No other layer
and no score propagation (that is method 'propagation', kbgraph.query.propagation.propagate). The vector indexes are read
through kbgraph.query.graph (``chunks_by_vector``, ``retrieve_atomic``; statements in ``cypher/retrieve/``).
"""

from __future__ import annotations

from typing import Any

from kbgraph.query.context import QueryContext
from kbgraph.query.graph import chunk_details, chunks_by_vector, retrieve_atomic, scored_chunk
from kbgraph.query.models import Candidate, Contribution, ScoredChunk
from kbgraph.settings import Settings
from kbgraph.store import GraphStore


def hierarchical_chunks(
    store: GraphStore, settings: Settings, question: str, qvec: Any
) -> tuple[list[ScoredChunk], list[Candidate], int]:
    """Fig. 11's union of paths (a) and (b) for ``question`` (PIKE-RAG §5.3.1, thresholds of §6.1).
    Args:
        store: the knowledge base's store.
        settings: its settings: ``hr_k``, ``hr_threshold``, ``hr_question_k``, ``hr_question_threshold``.
        question: the clean question.
        qvec: its vector (``dimension`` floats, unit length).
    Returns:
        (chunks, path (b)'s atomic questions best first, the number of chunks from path (a)). ``chunks``: path
        (a)'s then path (b)'s new ones, each with provenance and a breakdown naming the path(s) that reached it
        (layer ``Chunk`` for (a), ``AtomicQuestion`` for (b); weight 1, score = cosine).
    Raises:
        StoreError: as the store raises it."""
    chunks = chunks_by_vector(store, qvec, k=settings.baselines.hr_k, threshold=settings.baselines.hr_threshold)
    for c in chunks:
        c.breakdown = [Contribution(term="Chunk", node_id=c.id, similarity=c.score, weight=1.0, score=c.score)]
    atoms = retrieve_atomic(
        store,
        [question],
        [qvec],
        k=settings.baselines.hr_question_k,
        threshold=settings.baselines.hr_question_threshold,
    )
    by_id = {c.id: c for c in chunks}
    new: dict[str, list[Candidate]] = {}
    for a in atoms:
        if a.chunk_id not in by_id:
            new.setdefault(a.chunk_id, []).append(a)
    details = chunk_details(store, list(new))
    for cid, found in new.items():
        if cid in details:
            by_id[cid] = scored_chunk(details[cid], found[0].score)
            chunks.append(by_id[cid])
    for a in atoms:
        if a.chunk_id in by_id:
            by_id[a.chunk_id].breakdown.append(
                Contribution(
                    term="AtomicQuestion",
                    node_id=a.question_id,
                    text=a.text,
                    similarity=a.score,
                    weight=1.0,
                    score=a.score,
                )
            )
    return chunks, atoms, len(chunks) - sum(cid in details for cid in new)


def retrieve_hierarchical(question: str, ctx: QueryContext, *, k: int, explain: bool = False) -> list[ScoredChunk]:
    """Method 'hierarchical': the first ``k`` chunks of Fig. 11's union (:func:`hierarchical_chunks`).
    Args:
        question: the clean question.
        ctx: the knowledge base (store, settings, embedder).
        k: the number of chunks (fewer when the union is smaller, at most ``hr_k + hr_question_k``).
        explain: with their score breakdown (the path(s) that reached each).
    Returns:
        ``ScoredChunk`` list: path (a)'s best first, then path (b)'s new ones.
    Raises:
        StoreError: as the store raises it."""
    qvec = ctx.embedder.embed([question])[0]
    chunks, _atoms, _a = hierarchical_chunks(ctx.store, ctx.settings, question, qvec)
    out = chunks[:k]
    if not explain:
        for c in out:
            c.breakdown = []
    return out
