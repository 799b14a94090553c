"""Graph access shared by the query methods: chunks by vector (Fig. 11 path (a)), atomic questions and their
chunks (Fig. 11 path (b), Algorithm 1 line 4), the backup chunk retrieval of the authors' code, chunk
provenance and the conversion of a provenance row into a :class:`ScoredChunk` (PIKE-RAG §5.2.3, §5.3.2;
paper 003 §3.4).

Every statement is in ``cypher/retrieve/`` (``chunks_of_questions``, ``questions_of_chunks``,
``chunk_details``); the vector indexes are read with ``store.vector_search`` (cosine similarity in [-1, 1]).
Algorithm 1 (kbgraph.query.methods.decompose), the baselines (kbgraph.query.methods.baselines), score propagation
(kbgraph.query.propagation.propagate) and BM25 (kbgraph.query.bm25) import from here, never from each other.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np

from kbgraph.embed.base import Embedder
from kbgraph.query.models import Candidate, Contribution, ScoredChunk
from kbgraph.store import GraphStore
from kbgraph.store.base import Row


def text_of(v: Any) -> str:
    """``v`` as text: '' for None, a string as is, anything else through ``str``."""
    return "" if v is None else v if isinstance(v, str) else str(v)


def as_vector(v: Any) -> list[float]:
    """A vector (list, array, one row of ``embed``) as a flat list of floats, as the store takes it."""
    return np.asarray(v, dtype=np.float32).ravel().tolist()


def chunk_details(store: GraphStore, ids: Sequence[str]) -> dict[str, Row]:
    """Provenance rows of ``cypher/retrieve/chunk_details`` (id, text, summary, kind, page, section_path,
    document_id, document_title, document_uri) by chunk id; chunks of incomplete documents are absent."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return {}
    return {row["id"]: row for row in store.run("retrieve/chunk_details", {"ids": ids})}


def distinct_top(
    store: GraphStore,
    ranked: Sequence[str],
    k: int,
    read: Callable[[Sequence[str]], dict[str, Row]] | None = None,
    *,
    per_page: int = 0,
    same_page: dict[str, list[str]] | None = None,
) -> tuple[list[str], dict[str, Row]]:
    """The first ``k`` chunk ids of ``ranked`` (best first) whose texts differ, and their :func:`chunk_details`
    rows: a chunk whose text equals a better-ranked one's (a passage repeated in a document, or in two documents)
    is left out and the next one taken, so ``k`` distinct passages come back while ``ranked`` has them. A chunk
    without a row (no longer served) is kept as it is, as the caller keeps it. One ``retrieve/chunk_details`` read
    for the first ``k``; one more per further slice, only when a repeat was left out. ``read``: what gives the
    rows instead of that statement (kbgraph.query.propagation.adjacency ``Adjacency.details``). ``per_page`` > 0: at most that
    many chunks of one (document, page) are kept, the later ones left out like repeats (a chunk without a page is
    not limited; setting ``max_chunks_per_page``). ``same_page``: filled with {kept chunk id: the ids of its page's
    chunks left out by ``per_page``, in rank order} (their rows in the returned details too), the page's evidence
    that its result carries (:attr:`ScoredChunk.same_page`)."""
    top: list[str] = []
    details: dict[str, Row] = {}
    seen: set[str] = set()
    on_page: Counter[tuple[str, int]] = Counter()
    first_on: dict[tuple[str, int], str] = {}
    start = 0
    while len(top) < k and start < len(ranked):
        batch = list(ranked[start : start + k])
        start += len(batch)
        rows = read(batch) if read is not None else chunk_details(store, batch)
        for cid in batch:
            row = rows.get(cid)
            if row is not None:
                text = str(row.get("text") or "")
                if text and text in seen:
                    continue
                page = row.get("page")
                if per_page and page is not None:
                    where = (str(row.get("document_id") or ""), int(page))
                    if on_page[where] >= per_page:
                        if same_page is not None:
                            same_page.setdefault(first_on[where], []).append(cid)
                            seen.add(text)
                            details[cid] = row
                        continue
                    on_page[where] += 1
                    first_on.setdefault(where, cid)
                seen.add(text)
                details[cid] = row
            top.append(cid)
            if len(top) == k:
                break
    return top, details


def with_pages(chunks: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    """The chunks as an answer reads them: each result followed by the further chunks of its page that it carries
    (:attr:`ScoredChunk.same_page`, one result per page), in rank order.

    Args:
        chunks: retrieval results, best first.
    Returns:
        The results and their pages' chunks, flat, without nesting (``same_page`` empty on each)."""
    out: list[ScoredChunk] = []
    for chunk in chunks:
        out.append(chunk.model_copy(update={"same_page": []}) if chunk.same_page else chunk)
        out.extend(c.model_copy(update={"same_page": []}) for c in chunk.same_page)
    return out


def scored_chunk(row: Row, score: float, breakdown: Sequence[Contribution] = ()) -> ScoredChunk:
    """A provenance row of :func:`chunk_details` as a :class:`ScoredChunk` with ``score`` (and ``breakdown``);
    missing fields get their defaults."""
    return ScoredChunk(
        id=row["id"],
        score=float(score),
        text=row.get("text") or "",
        summary=row.get("summary"),
        kind=row.get("kind") or "text",
        page=row.get("page"),
        section_path=row.get("section_path") or "",
        document_id=row.get("document_id") or "",
        document_title=row.get("document_title") or "",
        document_uri=row.get("document_uri") or "",
        breakdown=list(breakdown),
    )


def chunks_by_vector(store: GraphStore, qvec: Any, *, k: int, threshold: float) -> list[ScoredChunk]:
    """Fig. 11 path (a): the top-``k`` chunks of the Chunk vector index with cosine >= ``threshold``, best
    first, with provenance (score = cosine)."""
    hits = [h for h in store.vector_search("Chunk", as_vector(qvec), k=k) if h.score >= threshold]
    details = chunk_details(store, [h.id for h in hits])
    return [scored_chunk(details[h.id], h.score) for h in hits if h.id in details]


def retrieve_atomic(
    store: GraphStore,
    queries: Sequence[str],
    vectors: Any,
    *,
    k: int,
    threshold: float,
    exclude: AbstractSet[str] = frozenset(),
) -> list[Candidate]:
    """Fig. 11 path (b), Algorithm 1 line 4: for each query (in order, with its vector), its top-``k``
    atomic questions by cosine similarity with similarity >= ``threshold``, best first, each with its chunk
    (``chunks_of_questions``); those whose chunk is in ``exclude`` are dropped after the top-k cut."""
    out: list[Candidate] = []
    for query, vec in zip(queries, vectors, strict=True):
        hits = [h for h in store.vector_search("AtomicQuestion", as_vector(vec), k=k) if h.score >= threshold]
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
                Candidate(
                    question_id=h.id,
                    text=text_of(h.properties.get("text")),
                    chunk_id=cid,
                    score=float(h.score),
                    query=query,
                )
            )
    return out


def retrieve_chunks_as_candidates(
    store: GraphStore,
    embedder: Embedder,
    question: str,
    qvec: Any,
    *,
    k: int,
    threshold: float,
    exclude: AbstractSet[str] = frozenset(),
) -> list[Candidate]:
    """Backup retrieval 2 of Algorithm 1 (authors' ``retrieve_atom_info_through_chunk``): top-``k`` chunks
    of the Chunk vector index with similarity >= ``threshold``, not in ``exclude``, each represented by its
    atomic question most similar to ``question`` (score = that similarity; a chunk without atomic questions
    keeps its own similarity and its opening words)."""
    hits = [
        h for h in store.vector_search("Chunk", as_vector(qvec), k=k) if h.score >= threshold and h.id not in exclude
    ]
    if not hits:
        return []
    rows = store.run("retrieve/questions_of_chunks", {"ids": [h.id for h in hits]})
    by_chunk: dict[str, list[Row]] = {}
    for row in rows:
        by_chunk.setdefault(row["chunk_id"], []).append(row)
    texts = list(dict.fromkeys(text_of(r["text"]) for r in rows))
    sims: dict[str, float] = {}
    if texts:
        vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
        q = np.asarray(qvec, dtype=np.float32).ravel()
        sims = {t: float(s) for t, s in zip(texts, vecs @ q, strict=True)}
    out = []
    for h in hits:
        atoms = by_chunk.get(h.id, [])
        if atoms:
            best = max(atoms, key=lambda r: (sims[text_of(r["text"])], r["question_id"]))
            out.append(
                Candidate(
                    question_id=best["question_id"],
                    text=text_of(best["text"]),
                    chunk_id=h.id,
                    score=sims[text_of(best["text"])],
                    query=question,
                )
            )
        else:
            text = " ".join(text_of(h.properties.get("text")).split())[:200]
            out.append(Candidate(question_id="", text=text, chunk_id=h.id, score=float(h.score), query=question))
    return out
