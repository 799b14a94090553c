"""The Retrieval Module of MIGRES (paper 002 §3.2) without its Query Generator (kbgraph.query.methods.migres): each
query retrieves chunks, a re-rank score filters the chunks and then their sentences, and the Memory Module's
record of what was already shown keeps hard negatives from coming back (§3.2 "Memory Module": it tracks "the
external knowledge retrieved" to "filter out the hard negative knowledge"). With sentence filtering, what
was shown is a chunk kept whole or a set of sentences: a whole chunk is not retrieved again, a sentence is
not shown again, so a chunk can come back with other sentences for another query.

Per iteration, for each query ``q`` (``retrieve_filtered``):

1. Retriever: the top ``migres_retrieve_k`` (50, Table 12) chunks for ``q`` by ``migres_retriever``:
   ``'bm25'`` (default) = BM25 over the chunks (kbgraph.query.bm25), the paper's retriever (§4.1) with its
   parameters k1 = ``migres_bm25_k1`` (0.9) and b = ``migres_bm25_b`` (0.4), an index of its own beside the
   'bm25' method's (k1 1.5, b 0.75); ``'graph'`` = the graph's layer seeds + score propagation
   (kbgraph.query.methods.retrieval, PIKE-RAG §5.2.3), kbgraph's. Chunks shown to the Leaf Module in an earlier
   iteration (whole) are left out; a chunk found by several queries counts once, for its best query.
2. Passage filter: the re-rank score of a chunk is the cosine between the embedding of ``q`` and the chunk's
   stored embedding (``GraphStore.chunk_similarities``: the embedder that built the graph, on the chunk's
   index text). The paper's re-rank model is a cross-encoder (BGE-reranker-base, §4.1); none is installed
   here, so the embedder is the re-rank model, and θ = ``migres_threshold`` is a cosine (the paper's
   θ = 3.0 is a reranker logit and does not carry over). Chunks below θ are dropped; of those left, over all
   queries, the ``migres_passages`` (k = 5, Table 12) best that still have something new to show go on.
3. Sentence-level re-rank and filtering (§3.2): the chunk is split into sentences (kbgraph.query.evidence's
   regex splitter, where the paper uses NLTK; a table chunk into its rows as 'header: value' pairs), each is
   embedded and scored by its cosine to ``q``, and those below θ are dropped. "Should the relevance of the
   entire passage surpass that of all the individual sentences", the whole chunk is kept instead (``whole``).

An empty result is the paper's "no remaining passage": the caller then prompts the LLM's own knowledge (§4.5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from kbgraph.query.context import QueryContext
from kbgraph.query.evidence import evidence_units
from kbgraph.query.models import MigresRound, ScoredChunk
from kbgraph.text import chunk_body, index_text
from kbgraph.query.bm25 import shared_index
from kbgraph.query.methods.retrieval import retrieve_propagation

if TYPE_CHECKING:
    from kbgraph.query.bm25 import BM25Index

Passage = MigresRound.MigresPassage
Sentence = MigresRound.MigresSentence

#: Sentences (or table rows) of one chunk that are scored.
MAX_UNITS = 60


@dataclass
class Kept:
    """A chunk the filter kept: its trace record, the chunk with provenance (``score`` = its cosine to the
    query) and the text the Leaf Module reads (the kept sentences in their order, or the whole chunk)."""

    passage: Passage
    chunk: ScoredChunk
    text: str


@dataclass
class Retriever:
    """The retriever of one MIGRES run on ``ctx`` (the BM25 index is opened on first use, once per run)."""

    ctx: QueryContext
    _bm25: BM25Index | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.ctx.settings.migres.migres_retriever

    def chunks(self, query: str, k: int) -> list[ScoredChunk]:
        """Top-``k`` chunks for ``query``, best first, with provenance."""
        if self.name == "bm25":
            if self._bm25 is None:
                s = self.ctx.settings
                self._bm25 = shared_index(self.ctx.store, s, k1=s.migres.migres_bm25_k1, b=s.migres.migres_bm25_b)
            return self._bm25.retrieve(self.ctx.store, query, k)

        return retrieve_propagation(query, self.ctx, k=k)


def retrieve_filtered(retriever: Retriever, queries: list[str], shown: set[str]) -> tuple[int, list[Kept]]:
    """Steps 1-3 of the module doc for ``queries``: (chunks retrieved before any filter, the kept chunks best
    first, at most ``migres_passages``). ``shown``: the Memory Module's record (:func:`shown_keys` of every
    earlier iteration): a chunk shown whole is not retrieved again, a sentence shown is not shown again, and
    a chunk with no new sentence left is skipped (the next best takes its place)."""
    ctx = retriever.ctx
    settings, theta, k = ctx.settings, ctx.settings.migres.migres_threshold, ctx.settings.migres.migres_passages
    qvecs = np.asarray(ctx.embedder.embed(queries), dtype=np.float32)
    retrieved = 0
    candidates: dict[str, tuple[float, str, int, ScoredChunk]] = {}  # chunk id -> (score, query, query index, chunk)
    for qi, query in enumerate(queries):
        found = [c for c in retriever.chunks(query, settings.migres.migres_retrieve_k) if c.id not in shown]
        retrieved += len(found)
        scores = _passage_scores(ctx, found, qvecs[qi])
        for c in found:
            s = scores.get(c.id)
            if s is not None and s >= theta and (c.id not in candidates or s > candidates[c.id][0]):
                candidates[c.id] = (s, query, qi, c)
    ranked = sorted(candidates.values(), key=lambda t: (-t[0], t[3].id))
    kept: list[Kept] = []
    for start in range(0, len(ranked), k):  # sentence filtering k chunks at a time, until k are kept
        kept += _filter_sentences(ctx, ranked[start : start + k], qvecs, theta, shown)
        if len(kept) >= k:
            break
    return retrieved, kept[:k]


def shown_keys(kept: list[Kept]) -> set[str]:
    """The Memory Module's record of what ``kept`` showed the Leaf Module: a whole chunk by its id, else each
    kept sentence by (chunk id, sentence)."""
    keys: set[str] = set()
    for item in kept:
        p = item.passage
        keys.update([p.chunk_id] if p.whole else (_key(p.chunk_id, s.text) for s in p.sentences))
    return keys


def _key(chunk_id: str, sentence: str) -> str:
    return f"{chunk_id}\x00{sentence}"


def _passage_scores(ctx: QueryContext, chunks: list[ScoredChunk], qvec: np.ndarray) -> dict[str, float]:
    """Cosine of ``qvec`` to each chunk's stored embedding; a chunk without one is embedded here (its index
    text, as ingestion embeds it)."""
    scores = ctx.store.chunk_similarities([c.id for c in chunks], qvec.tolist())
    missing = [c for c in chunks if c.id not in scores]
    if missing:
        texts = [index_text(c.document_title, c.section_path, c.kind, c.text, c.summary) for c in missing]
        vecs = np.asarray(ctx.embedder.embed(texts), dtype=np.float32)
        scores.update({c.id: float(v @ qvec) for c, v in zip(missing, vecs, strict=True)})
    return scores


def _filter_sentences(
    ctx: QueryContext, best: list[tuple[float, str, int, ScoredChunk]], qvecs: np.ndarray, theta: float, shown: set[str]
) -> list[Kept]:
    """Step 3 for each (score, query, query index, chunk) of ``best``, in one embedding call; sentences in
    ``shown`` are left out, and so is a chunk (not kept whole) with no other sentence left."""
    units = [evidence_units(c, MAX_UNITS) for *_, c in best]
    flat = [u for group in units for u in group]
    vecs = np.asarray(ctx.embedder.embed(flat), dtype=np.float32) if flat else np.zeros((0, qvecs.shape[1]))
    out: list[Kept] = []
    i = 0
    for (score, query, qi, chunk), group in zip(best, units, strict=True):
        sims = vecs[i : i + len(group)] @ qvecs[qi]
        i += len(group)
        whole = not group or score > float(np.max(sims))
        kept = [
            Sentence(text=u, score=round(float(s), 4))
            for u, s in zip(group, sims, strict=True)
            if s >= theta and _key(chunk.id, u) not in shown
        ]
        if not whole and not kept:
            continue
        passage = Passage(
            chunk_id=chunk.id,
            query=query,
            score=round(score, 4),
            document_title=chunk.document_title,
            whole=whole,
            sentences=kept,
        )
        text = chunk_body(chunk.kind, chunk.text, chunk.summary) if whole else " ".join(s.text for s in kept)
        text = text if chunk.kind == "table" else " ".join(text.split())  # a table keeps its rows' lines
        out.append(Kept(passage, chunk.model_copy(update={"score": score}), text))
    return out
