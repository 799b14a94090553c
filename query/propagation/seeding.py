"""The seeds of score propagation (PIKE-RAG §5.2.3, Fig. 8): each layer's vector top ``seed_k`` for the question,
and the full-text seeds on Chunk.text (BM25's top, or the store's full-text index) and Entity.name, read at once
(kbgraph.store.parallel.gather). kbgraph.query.propagation.propagate turns them into chunk scores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kbgraph.embed.static_model import get_static_embedder
from kbgraph.models import VECTOR_LABELS, FulltextHit, VectorHit
from kbgraph.query.propagation.adjacency_cache import shared_adjacency
from kbgraph.query.propagation.cards import card_seeds
from kbgraph.query.bm25 import ENTITY_NAMES, corpus_generation, shared_index
from kbgraph.query.models import Seeds
from kbgraph.query.propagation.rankers import get_ranker
from kbgraph.settings import Settings
from kbgraph.store import GraphStore
from kbgraph.store.base import Row
from kbgraph.store.parallel import gather
from kbgraph.store.scope import OVERFETCH_MARGIN, OVERFETCH_MAX, DocumentScope, current_scope, overfetch

#: Vector-seeded layers and the weight setting of each.
LAYER_WEIGHTS = {
    "Chunk": "weight_chunk",
    "AtomicQuestion": "weight_question",
    "Triple": "weight_triple",
    "Entity": "weight_entity",
    "Section": "weight_section",
    "Document": "weight_document",
}


def seed_layers(
    store: GraphStore, settings: Settings, question: str, qvec: Sequence[float], layers: Sequence[str] | None = None
) -> Seeds:
    """Vector top-``seed_k`` on each layer's index (or on ``layers`` only), plus full-text top-``fulltext_k``
    on Chunk.text and Entity.name when every layer is seeded, and with ``weight_document_text`` > 0 the question's best
    document cards (the ``DocumentText`` layer, kbgraph.query.propagation.cards: BM25 over each document's title,
    other titles, file name and first page, normalised by the best card's score). The Chunk full-text seeds (the ``FullText`` term)
    are BM25's top ``fulltext_k`` (kbgraph.query.bm25's index of this knowledge base, kept in memory) rather than the
    store's full-text index while ``ranker_bm25_k`` > 0 (:func:`fulltext_from_bm25`): one read fewer, the longest of
    the seeding (benchmarks/HISTORY.md, "Chunk full-text seeds from BM25"). With the learned ranker, also BM25's top
    ``ranker_bm25_k`` chunks (``Seeds.bm25``) from the same search. The reads run at once on a store with
    ``parallel_reads`` (kbgraph.store.parallel.gather). A layer whose vectors are off (``settings.embedding.vector_layers``)
    has no vector seeds: its nodes still reach chunks through the full-text seeds and the hops, as in a knowledge
    base built without its vectors. A layer of ``settings.embedding.static_layers`` is
    searched with the question's vector from the static model its nodes were embedded with
    (``kbgraph.embed.static_model``), the others with ``qvec``. In a document scope (kbgraph.store.scope, a
    filter): the seeds are the scope's nodes only, the exact top ``seed_k`` of each layer of documents or the
    allowed nodes of each index's over-fetched top (:func:`exact_seeds`); BM25 scores the
    scope's chunks only (issue 58: a filtered question gets the best chunks of its documents, not what is left
    of an unfiltered top)."""
    seeds = Seeds(query_vector=list(qvec), question=question)
    off = settings.embedding.vector_layers_off
    seed_k = settings.retrieval.seed_k
    scope = current_scope()
    exact = scope is not None and exact_seeds(settings, scope.fraction, len(scope.chunks))
    if layers is not None:
        static = settings.embedding.static_model_layers
        own = static_question_vectors(settings, question) if any(label in static for label in layers) else {}
        for label in layers:
            if label in off:
                continue
            hits: Sequence[VectorHit | FulltextHit] | None = None
            if label == "Chunk" and scope is not None and settings.retrieval.filter_seeding != "overfetch":
                # the scope's exact top chunks: from the graph in memory when this process holds it (cheaper than
                # over-fetching the index), else from the store when the scope is to be seeded exactly
                hits = scoped_chunk_seeds(store, settings, qvec, scope, seed_k, store_too=exact)
            if hits is None:
                hits = store.vector_search(label, own.get(label, qvec), k=seed_k)
            seeds.layers[label] = {h.id: (max(0.0, h.score), _text(h.properties)) for h in hits[:seed_k]}
        return seeds
    fulltext = settings.retrieval.fulltext_k if settings.retrieval.weight_fulltext else 0
    # reads at once: the vector seeds, the Entity.name full-text seeds, BM25 in memory, and the Chunk.text full-text
    # seeds only without BM25 (that read was the seeding's longest: benchmarks/HISTORY.md)
    from_bm25 = fulltext > 0 and fulltext_from_bm25(settings)  # the Chunk full-text seeds are BM25's
    names_k = fulltext if settings.retrieval.entity_fulltext == "bm25" else 0  # the Entity.name seeds too
    pool_k = settings.retrieval.ranker_bm25_k if get_ranker(settings.retrieval.ranker).needs_pool else 0
    # in a scope, the exact top chunks from the graph in memory when this process holds it: the Chunk index is then
    # read as without a scope (not over-fetched; its rows replaced), and the exact statement skips the Chunk layer
    in_memory = None
    if scope is not None and settings.retrieval.filter_seeding != "overfetch" and "Chunk" not in off:
        in_memory = scoped_chunk_seeds(store, settings, qvec, scope, seed_k, store_too=False)
    layers_read = [label for label in VECTOR_LABELS if in_memory is None or label != "Chunk"]
    vectors, chunk_text, entity_name, (seeds.generation, bm25, cards, names) = gather(
        store,
        # the static model's question vector is made in this thread while the other reads are under way
        lambda: store.seed_vectors(
            qvec,
            seed_k,
            layer_embeddings=static_question_vectors(settings, question),
            scoped_k=overfetch(seed_k, scope.fraction) if scope is not None else None,
            chunk_k=seed_k if in_memory is not None else None,
            exact=exact,
            layers=layers_read,
        ),
        (lambda: {}) if from_bm25 else (lambda: store.seed_fulltext(question, fulltext, ("Chunk",))),
        (lambda: {}) if names_k else (lambda: store.seed_fulltext(question, fulltext, ("Entity",))),
        lambda: _lexical_hits(store, settings, question, max(pool_k, fulltext if from_bm25 else 0), names_k),
    )
    if names_k:
        entity_name = {"Entity.name": names}
    seeds.bm25 = bm25[:pool_k]
    if from_bm25:
        chunk_text = {
            "Chunk.text": [
                FulltextHit(id=cid, label="Chunk", score=score, properties={}) for cid, score in bm25[:fulltext]
            ]
        }
    vectors = {label: hits[:seed_k] for label, hits in vectors.items()}  # over-fetched in a scope
    if in_memory is not None:
        vectors["Chunk"] = in_memory
    found = {**chunk_text, **entity_name, **vectors}
    for label in LAYER_WEIGHTS:
        if label not in off:
            seeds.layers[label] = {h.id: (max(0.0, h.score), _text(h.properties)) for h in found.get(label, [])}
    if cards:
        seeds.layers["DocumentText"] = cards
    for key, layer in (("Chunk.text", "FullText"), ("Entity.name", "EntityText")):
        if key in found:
            text_hits = found[key]
            top = max((h.score for h in text_hits), default=0.0)
            seeds.layers[layer] = {h.id: (h.score / top if top > 0 else 0.0, _text(h.properties)) for h in text_hits}
    return seeds


def exact_seeds(settings: Settings, fraction: float, chunks: int) -> bool:
    """Whether a scope holding ``fraction`` of the chunks (``chunks`` of them) is seeded exactly (setting
    ``filter_seeding``): 'auto' over-fetches while :func:`kbgraph.store.scope.overfetch`'s bound covers the scope
    (measured on 2Wiki in 10 groups: the same R@5 as exact seeds, at less cost: docs/benchmarks.md#filters), and
    computes exact seeds for a smaller scope of at most ``filter_exact_chunks`` chunks."""
    mode = settings.retrieval.filter_seeding
    if mode != "auto":
        return mode == "exact"
    return fraction * OVERFETCH_MAX < OVERFETCH_MARGIN and chunks <= settings.retrieval.filter_exact_chunks


def scoped_chunk_seeds(
    store: GraphStore,
    settings: Settings,
    qvec: Sequence[float],
    scope: DocumentScope,
    k: int,
    *,
    store_too: bool = True,
) -> list[VectorHit | FulltextHit] | None:
    """The exact top-``k`` chunks of a document scope's chunks by cosine with ``qvec``: from the
    adjacency held in memory when this process has it for the current generation (kbgraph.query.propagation.adjacency
    ``top_chunks``: a filtered dense question on 2Wiki 3.0 ms p50 against 2.6 unfiltered, docs/benchmarks.md#filters),
    else with ``store_too`` from ``retrieve/seed_vectors_within`` in the store, else None."""
    view = None
    if settings.retrieval.adjacency_cache:  # the scope's own generation when known: no statement to read it again
        generation = list(scope.generation) if scope.generation is not None else corpus_generation(store)
        view = shared_adjacency(store, settings, generation)
    if view is not None:
        return list(view.top_chunks(qvec, scope.chunks, k))
    return store.seed_vectors(qvec, k, exact=True, layers=("Chunk",))["Chunk"] if store_too else None


def fulltext_from_bm25(settings: Settings) -> bool:
    """Whether the Chunk full-text seeds (the ``FullText`` term) are BM25's top ``fulltext_k``: whenever BM25 is
    on (``ranker_bm25_k`` > 0, every ranker), else the store's full-text index on Chunk.text."""
    return settings.retrieval.ranker_bm25_k > 0


def _lexical_hits(
    store: GraphStore, settings: Settings, question: str, k: int, names_k: int = 0
) -> tuple[list[Any] | None, Hits, dict[str, tuple[float, str]], list[VectorHit | FulltextHit]]:
    """(the corpus generation, BM25's top ``k`` (chunk id, score) for ``question``, best first, the DocumentText
    seeds, the Entity.name full-text seeds): the generation (kbgraph.query.bm25 ``corpus_generation``, one light
    statement) keys BM25's shared indexes, the document cards (kbgraph.query.propagation.cards ``card_seeds``, with
    ``weight_document_text`` > 0) and the adjacency (kbgraph.query.propagation.adjacency); None when none is wanted
    (``k`` and ``names_k`` 0, no cards and setting ``adjacency_cache`` off). In a document scope: the scope's chunks
    and cards only. The Entity.name seeds (:func:`entity_name_seeds`, ``names_k`` > 0) are not scoped, as the
    store's full-text seeds on Entity are not (kbgraph.store.scope ``UNSCOPED_LABELS``)."""
    with_cards = settings.retrieval.weight_document_text > 0
    if k <= 0 and names_k <= 0 and not with_cards and not settings.retrieval.adjacency_cache:
        return None, [], {}, []
    scope = current_scope()  # a filter's scope keeps the generation it was resolved at: no statement to read it again
    generation = (
        list(scope.generation) if scope is not None and scope.generation is not None else corpus_generation(store)
    )
    hits: Hits = []
    if k > 0:
        index = shared_index(store, settings, generation=generation)
        hits = index.search(question, k, within=None if scope is None else scope.chunks)
    names = entity_name_seeds(store, settings, question, names_k, generation) if names_k > 0 else []
    return generation, hits, card_seeds(store, settings, question, generation) if with_cards else {}, names


def entity_name_seeds(
    store: GraphStore, settings: Settings, question: str, k: int, generation: list[Any] | None = None
) -> list[VectorHit | FulltextHit]:
    """The Entity.name full-text seeds from memory (setting ``entity_fulltext`` 'bm25'): the top ``k`` entities by
    BM25 of their names against ``question`` (kbgraph.query.bm25 :data:`~kbgraph.query.bm25.ENTITY_NAMES`, kept per
    corpus generation as the chunks' index is, on disk and in memory), best first (a cut inside a tie keeps the smallest ids), as FulltextHit
    (label 'Entity', the raw BM25 score, properties {'text': the name}); [] when no name shares a word with the
    question. The store's full-text index (``retrieve/seed_fulltext_entity``) scored the same role with its own
    engine (RediSearch on FalkorDB, Lucene on Neo4j): this one is the same on both stores and sends no statement
    per question (docs/scoring.md: faster on the long-document set, not on the passage sets)."""
    index = shared_index(store, settings, generation=generation, corpus=ENTITY_NAMES)
    # ties by id: names often score alike ("Mathew" PERSON and ORG), so a cut inside a tie keeps the smallest ids,
    # as the store's statement does (cypher/fragments/falkordb.cypher; tests/test_fulltext_seeds.py)
    hits = index.top(question, k)
    return [
        FulltextHit(id=eid, label="Entity", score=score, properties={"text": index.text(eid)}) for eid, score in hits
    ]


#: BM25 hits: (chunk id, BM25 score), best first.
Hits = list[tuple[str, float]]


def static_question_vectors(settings: Settings, question: str) -> dict[str, list[float]]:
    """{label: the question's vector from the static model} for each layer of ``settings.embedding.static_layers``
    (``static_model_layers``: its index has the static model's dimension even when its seeds are off, and every
    vector index is searched in one statement); {} when there is none. ConfigError as
    ``kbgraph.embed.static_model.get_static_embedder``."""
    layers = settings.embedding.static_model_layers
    if not layers:
        return {}

    vec = get_static_embedder(settings).embed([question])[0].tolist()
    return {label: vec for label in layers}


def _text(props: Row) -> str:
    return str(props.get("text") or props.get("name") or props.get("title") or props.get("path") or "")
