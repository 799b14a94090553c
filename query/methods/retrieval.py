"""The retrieval methods on the graph through the propagation formula of kbgraph.query.propagation.propagate with one
question embedding (PIKE-RAG §5.2.3, Fig. 8):

* ``propagation``: every layer's seeds (vector and full text) + multi-granularity score propagation with
  the settings' weights; the default without an LLM (``retrieve_propagation``). With an LLM and
  ``auto_tagging`` on, also the question's mapped tags (PIKE-RAG §5.2.2: the Tag layer, full-text rewrite).
* ``dense``: the Chunk vector index alone, the flat baseline (``dense_settings``; ``retrieve_dense``).

Each returns the top ``k`` chunks, best first, as :class:`ScoredChunk` (``explain``: with every score term).
The question must already be clean (kbgraph.query.ask.clean_question). Method ``hierarchical`` (Fig. 11's
union of paths (a) and (b), no propagation) is kbgraph.query.methods.hierarchical.
"""

from __future__ import annotations

from kbgraph.query.context import QueryContext
from kbgraph.query.models import ScoredChunk
from kbgraph.query.propagation.propagate import propagate
from kbgraph.query.propagation.seeding import seed_layers
from kbgraph.query.tags import question_tags
from kbgraph.settings import Settings


def dense_settings(settings: Settings) -> Settings:
    """The settings of method 'dense'.
    Args:
        settings: the knowledge base's settings.
    Returns:
        ``settings`` with every propagation term but the chunk's own similarity switched off (ranker 'weights')."""
    off = ("weight_hop", "weight_title_hop", "weight_next", "weight_triple_hop", "weight_fulltext")
    return settings.updated({**dict.fromkeys(off, 0.0), "ranker": "weights"})


def _question_vector(question: str, ctx: QueryContext) -> list[float]:
    vector: list[float] = ctx.embedder.embed([question])[0].tolist()
    return vector


def retrieve_propagation(question: str, ctx: QueryContext, *, k: int, explain: bool = False) -> list[ScoredChunk]:
    """Method 'propagation': top-``k`` chunks by layer seeds + score propagation (PIKE-RAG §5.2.3) with
    ``ctx.settings``' weights and ranker; with an LLM and ``auto_tagging`` on, the question's mapped tags seed the
    Tag layer and (``tag_rewrite``) extend the full-text query (PIKE-RAG §5.2.2, kbgraph.query.tags; a failing
    LLM server is logged and the tags left out).
    Args:
        question: the clean question.
        ctx: the knowledge base (store, settings, embedder; the LLM for the question's tags, or None).
        k: the number of chunks.
        explain: each chunk's score terms (``breakdown``).
    Returns:
        At most ``k`` ``ScoredChunk``, best first, of complete documents only.
    Raises:
        StoreError: the store fails a statement."""
    qvec = _question_vector(question, ctx)
    tagging = question_tags(question, ctx)
    text = tagging.rewrite(question) if tagging is not None and ctx.settings.tagging.tag_rewrite else question
    seeds = seed_layers(ctx.store, ctx.settings, text, qvec)
    if tagging is not None:
        seeds.layers["Tag"] = tagging.seed_layer()
    return propagate(ctx.store, ctx.settings, seeds, k=k, explain=explain)


def retrieve_dense(question: str, ctx: QueryContext, *, k: int, explain: bool = False) -> list[ScoredChunk]:
    """Method 'dense': top-``k`` chunks of the Chunk vector index (its top ``seed_k`` seeds, no other layer, no hop).
    Args:
        question: the clean question.
        ctx: the knowledge base (store, settings, embedder).
        k: the number of chunks.
        explain: each chunk's score term (its similarity).
    Returns:
        At most ``k`` ``ScoredChunk``, best first, score = cosine similarity.
    Raises:
        StoreError: the store fails a statement."""
    seeds = seed_layers(ctx.store, ctx.settings, question, _question_vector(question, ctx), layers=["Chunk"])
    return propagate(ctx.store, dense_settings(ctx.settings), seeds, k=k, explain=explain)
