"""Layer seeds and multi-granularity score propagation (PIKE-RAG §5.2.3, Fig. 8; hierarchical retrieval
paths (a) and (b) of Fig. 11).

Seeds. The question q is embedded once; each layer's vector index gives its top ``seed_k`` nodes with
cosine similarity g(q, n) in [-1, 1] (negative similarities are clipped to 0); full-text search on Chunk.text
and on Entity.name give keyword seeds, each normalised to [0, 1] by the best full-text score of the query.

Propagation. Each traversal is a Cypher statement in ``cypher/retrieve/`` (or its rows from the graph a long-lived
process holds in memory, kbgraph.query.propagation.adjacency); the aggregation is this formula,
with every weight a setting (``weight_*``):

    S1(c) = w_C · g(q, c)                                   the chunk itself (path a)
          + w_Q · max_{a : c -HAS_QUESTION-> a} g(q, a)     atomic questions (path b)
          + w_T · max_{t : t -EXTRACTED_FROM-> c} g(q, t)   triples
          + w_E · max_{e : c -MENTIONS-> e} g(q, e)         entities (mentioned by <= max_entity_degree chunks)
          + w_F · ft(q, c)                                  full-text keyword match on Chunk.text
          + w_F · max_{e : c -MENTIONS-> e} ft(q, e)        full-text match on Entity.name
          + w_G · max_{t : c -TAGGED-> t} m(q, t)           mapped corpus tags (auto-tagging, §5.2.2; tags on
                                                            <= tag_max_chunks chunks)
          + w_S · g(q, s(c))   + w_D · g(q, d(c))           parent section and document, for chunks that
          + w_DT · b(q, d(c))                               already have a score from the layers above (b: the
                                                            document card's BM25 over the best card's,
                                                            kbgraph.query.propagation.cards)

    S(c)  = S1(c) + w_H · max_{c', e : c' -MENTIONS-> e <-MENTIONS- c} S1(c') · sp(e) / log2(1 + deg(e))
                  + w_TH · max_{c', e : c' -MENTIONS-> e <-MENTIONS- c, e TITLE = title of d(c)} S1(c') / n(c', e)
                  + w_N · max_{c' : c' -NEXT- c} S1(c')
                  + w_R · max_{e, o : e -RELATED-> o <-MENTIONS- c} g(q, e) · 1/log2(1 + deg(o))   triple hop

where g is 0 for a node that is not among its layer's seeds, except on the Chunk layer: there g(q, c) is the
exact cosine for every candidate chunk (``rescore_k`` per pass: once for the chunks the layers reached, once
for the chunks the hops reached), so a chunk found through an entity or a hop is ranked by its own similarity
too. The hops start only from the ``hop_from`` best chunks by S1; the title hop follows a chunk's mention of
another document's title to the chunks of that document that mention it (the second hop of a multi-hop
question), shared among the n(c', e) chunks it reaches, so a long document's many chunks do not flood the
top; deg(e) is the number of chunks mentioning e; sp(e) is 1 when c' and c are in one document, else the
entity's IDF over the N documents over that of ``hop_document_share``, min(1, log(N / df(e)) / log(1 / share))
(kbgraph.query.propagation.adjacency ``specificity``: a generic entity does not carry score into other documents). The
triple hop (w_R, 0 = off by default: docs/scoring.md) starts
from the question's entities instead (Entity and EntityText seeds), along their triples to the chunks naming the
object. Maxima (not sums) inside a layer keep a chunk with many similar atomic questions from outscoring a chunk
with one exact match.

m(q, t) is the score of a corpus tag that the question's tags map to (kbgraph.query.tags: the MAPS_TO score of
the tag pair collection, or the cosine of a question tag and the corpus tag on the Tag vector index); it is 0
for every tag, and the term is absent, without an LLM or with ``auto_tagging`` off. The Tag layer's seeds are
``Seeds.layers['Tag']``, set by the caller (kbgraph.query.methods.retrieval); with ``tag_rewrite`` the full-text
seeds ft(q, .) are those of the question followed by the mapped tags' names.

Default weights: the ``weight_*``, ``hop_from`` and ``rescore_k`` settings (docs/settings.md), chosen on MuSiQue
and 2WikiMultihopQA (benchmarks/query.py).

``explain=True`` keeps every term: for each chunk the contributions by layer and node, whose sum is the
chunk's score exactly.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Collection, Sequence
from typing import NamedTuple

from kbgraph.query.propagation.adjacency import Adjacency
from kbgraph.query.propagation.adjacency_cache import shared_adjacency
from kbgraph.query.bm25 import corpus_generation
from kbgraph.query.graph import chunk_details, distinct_top, scored_chunk
from kbgraph.query.models import Contribution, RankerTerm, ScoredChunk, Seeds
from kbgraph.query.propagation.ranking_learned import Candidate as RankCandidate
from kbgraph.query.propagation.rankers import get_ranker
from kbgraph.query.propagation.terms import (
    Reached,
    Term,
    TermTable,
    add_term,
    hop_terms,
    layer_sum,
    layer_terms,
    note_rows,
)
from kbgraph.settings import Settings
from kbgraph.store import GraphStore
from kbgraph.store.base import Row
from kbgraph.store.scope import current_scope

#: The parameters of ``retrieve/layer_candidates`` (``LAYER_PARAMS``) and of ``retrieve/hop_neighbours``
#: (``HOP_PARAMS``) that give it rows: each statement is sent when one of its own is not empty.
LAYER_PARAMS = (
    "chunk_ids",
    "question_ids",
    "triple_ids",
    "entity_seeds",
    "entity_text_seeds",
    "tag_seeds",
    "section_ids",
)
HOP_PARAMS = ("entity_hop_sources", "title_hop_ids", "next_ids", "triple_hop_seeds")


def propagate(
    store: GraphStore, settings: Settings, seeds: Seeds, *, k: int, explain: bool = False
) -> list[ScoredChunk]:
    """Aggregate layer seeds into chunk scores by the module's formula (:func:`score_terms`), order them by
    the settings' ranker (kbgraph.query.propagation.rankers: the weighted sum's own order, or the ranker's ``order`` of
    :func:`learned_pool`) and return the top ``k`` chunks, best first, with provenance (and the full breakdown when ``explain``);
    with ``collapse_repeated_chunks``, a chunk whose text a better one has is left out (query.graph.distinct_top)."""
    view = shared_adjacency(store, settings, seeds.generation)  # the graph in memory, once built: one look a question
    terms, scores, ranked, reached = score_terms(store, settings, seeds, k=k, view=view)
    ranking: dict[str, list[RankerTerm]] = {}
    collapse = settings.retrieval.collapse_repeated_chunks
    wide = len(ranked) + len(seeds.bm25) if collapse else k  # the whole order, to take the next after a repeat
    order = get_ranker(settings.retrieval.ranker).order
    if order is not None and ranked:
        pool = learned_pool(store, settings, seeds, ranked, terms, scores, k, reached, view)
        top, scores, ranking = order(store, settings, seeds.question, pool, wide, explain)
    else:
        top = ranked[:wide]
    read = view.details if view is not None else (lambda ids: chunk_details(store, ids))
    per_page = settings.retrieval.max_chunks_per_page
    same_page: dict[str, list[str]] = {}  # a page's result -> the page's further chunks, its evidence
    top, details = (
        distinct_top(store, top, k, read, per_page=per_page, same_page=same_page) if collapse else (top, read(top))
    )

    def result(cid: str) -> ScoredChunk:
        breakdown = []
        if explain:
            breakdown = [
                Contribution(
                    term=term, node_id=node_id, text=text, similarity=sim, weight=weight, factor=factor, score=score
                )
                for term, (score, node_id, text, sim, weight, factor) in terms[cid].items()
            ]
            breakdown.sort(key=lambda t: -t.score)
        chunk = scored_chunk(details.get(cid, {"id": cid}), scores[cid], breakdown)
        chunk.ranking = ranking.get(cid, [])
        return chunk

    out = []
    for cid in top:
        chunk = result(cid)
        chunk.same_page = [result(other) for other in same_page.get(cid, ())]
        out.append(chunk)
    return out


class Scored(NamedTuple):
    """The formula's result (:func:`score_terms`): {chunk id: {layer: its best term}}, {chunk id: weighted sum
    S(c)}, chunk ids by S(c) best first (ties by id), and what the statements said of the chunks they reached
    (:class:`Reached`: the titles and exact similarities :func:`learned_pool` needs, BM25's hits included)."""

    terms: dict[str, dict[str, Term]]
    scores: dict[str, float]
    ranked: list[str]
    reached: Reached


def score_terms(
    store: GraphStore, settings: Settings, seeds: Seeds, *, k: int, view: Adjacency | None = None
) -> Scored:
    """The module's formula (:class:`Scored`). ``k`` widens the NEXT hop's sources to the top ``k``. Two
    statements, one round trip each: ``retrieve/layer_candidates`` (every layer's chunks, the tags', the section
    and document priors' facts, and each candidate's exact similarity and document title) and
    ``retrieve/hop_neighbours`` (the hops, with the same facts of the chunks they reach); the rescoring of the
    best ``rescore_k`` candidates of each pass reads the similarities these rows carry. ``view``: the graph this
    process holds in memory (kbgraph.query.propagation.adjacency ``shared_adjacency``, looked up once per question
    by the caller), which gives the same rows instead."""
    r = settings.retrieval
    scope = current_scope()  # a filter's documents (kbgraph.store.scope): only their chunks are candidates
    documents = None if scope is None else scope.document_ids
    table = TermTable()
    layers = seeds.layers
    for cid, (sim, _) in layers.get("Chunk", {}).items():
        table.add(cid, "Chunk", cid, "", sim, r.weight_chunk)
    for cid, (sim, _) in layers.get("FullText", {}).items():
        table.add(cid, "FullText", cid, "", sim, r.weight_fulltext)
    exact = bool(r.rescore_k and r.weight_chunk and seeds.query_vector is not None)
    vector = store.check_vector(seeds.query_vector) if seeds.query_vector is not None and r.weight_chunk else None
    reached = Reached({}, {})
    want_titles = get_ranker(r.ranker).needs_pool

    # every layer's seeds -> their chunks, and what is known of each candidate, in one statement
    params = _layer_params(settings, seeds, table.terms, exact, vector, want_titles, documents)
    rows: list[Row] = []
    if any(params[key] for key in LAYER_PARAMS):
        rows = view.layer_rows(params) if view is not None else store.run("retrieve/layer_candidates", params)
        note_rows(store, reached, rows, params["with_similarity"])
    layer_terms(rows, seeds, r, table)
    table.rescored.update(layers.get("Chunk", {}))
    s1 = table.rescore(r.rescore_k if exact else 0, reached.similarity, r.weight_chunk)
    sources = heapq.nsmallest(max(r.hop_from, k), s1, key=lambda c: (-s1[c], c))  # the best, as sorted(...)[:n]

    # the second hop (shared entities, title links, NEXT, the question entities' triples): one statement
    relation: dict[str, float] = {}  # the triple hop's sources: the question's entities at their best similarity
    for layer in ("Entity", "EntityText") if r.weight_triple_hop else ():
        for entity, (sim, _) in layers.get(layer, {}).items():
            relation[entity] = max(sim, relation.get(entity, 0.0))
    params = _hop_params(store, settings, seeds, s1, sources, relation, documents, want_titles)
    params.update(with_similarity=exact, embedding=vector if exact else None)
    rows = (
        []
        if not (s1 and any(params[x] for x in HOP_PARAMS))
        else (view.hop_rows(params) if view is not None else store.run("retrieve/hop_neighbours", params))
    )
    note_rows(store, reached, rows, exact)
    hop_terms(rows, table.add, s1, relation, r)
    scores = table.rescore(r.rescore_k if exact else 0, reached.similarity, r.weight_chunk)  # what the hops reached
    ranked = sorted(sorted(scores), key=scores.__getitem__, reverse=True)  # by S(c), ties by id (a stable sort)
    return Scored(table.terms, scores, ranked, reached)


def _layer_params(
    settings: Settings,
    seeds: Seeds,
    terms: dict[str, dict[str, Term]],
    exact: bool,
    vector: object,
    want_titles: bool,
    documents: Collection[str] | None,
) -> Row:
    """The parameters of ``retrieve/layer_candidates`` (or the adjacency's ``layer_rows``): every weighted layer's
    seeds; the seeded chunks' own rows only when something needs them (the learned ranker's titles, BM25's hits, a
    Document prior, the exact similarity of a full-text seed): the dense baseline sends no statement."""
    r, layers = settings.retrieval, seeds.layers

    def ids(layer: str, weight: float) -> list[str]:
        return list(layers.get(layer, {})) if weight else []

    def sims(layer: str, weight: float) -> list[Row]:
        return [{"id": node, "sim": sim} for node, (sim, _) in layers.get(layer, {}).items()] if weight else []

    document_seeds = (layers.get("Document", {}) if r.weight_document else {}) or (
        layers.get("DocumentText", {}) if r.weight_document_text else {}
    )
    seeded = set(layers.get("Chunk", {}))
    own_rows = want_titles or bool(seeds.bm25 or document_seeds) or (exact and any(c not in seeded for c in terms))
    with_similarity = vector is not None and (exact or bool(seeds.bm25))
    return {
        "chunk_ids": list(dict.fromkeys([*terms, *(cid for cid, _ in seeds.bm25)])) if own_rows else [],
        "question_ids": ids("AtomicQuestion", r.weight_question),
        "triple_ids": ids("Triple", r.weight_triple),
        "entity_seeds": sims("Entity", r.weight_entity),
        "entity_text_seeds": sims("EntityText", r.weight_fulltext),
        "tag_seeds": sims("Tag", r.weight_tag),
        "section_ids": ids("Section", r.weight_section),
        "max_degree": r.max_entity_degree,
        "tag_max_degree": settings.tagging.tag_max_chunks,
        "with_titles": want_titles,
        "documents": documents,  # a document scope's ids (the statements get it from the store too)
        # exact similarities for the rescoring, and for BM25's hits (the learned pool) even without rescoring
        "with_similarity": with_similarity,
        "embedding": vector if with_similarity else None,
    }


def _hop_params(
    store: GraphStore,
    settings: Settings,
    seeds: Seeds,
    s1: dict[str, float],
    sources: list[str],
    relation: dict[str, float],
    documents: Collection[str] | None,
    want_titles: bool,
) -> Row:
    """The parameters of ``retrieve/hop_neighbours`` (or the adjacency's ``hop_rows``) but the similarity's: the
    hops from the best ``hop_from`` chunks by S1 (``sources``, best first), NEXT from the best max(hop_from, k), the
    triple hop from the question's entities (``relation``)."""
    r = settings.retrieval
    hop_sources = sources[: r.hop_from]
    return {
        "entity_hop_sources": [{"id": c, "score": s1[c]} for c in hop_sources] if r.weight_hop else [],
        "title_hop_ids": hop_sources if r.weight_title_hop else [],
        "next_ids": sources if r.weight_next else [],
        "triple_hop_seeds": [{"id": e, "sim": sim} for e, sim in relation.items() if sim > 0],
        "max_degree": r.max_entity_degree,
        # an entity hop from one document to another: weighted by the entity's IDF over the documents
        "document_count": _document_count(store, seeds, documents),
        "specific_idf": -math.log(r.hop_document_share) if 0 < r.hop_document_share < 1 else 0.0,
        "with_titles": want_titles,
        "documents": documents,
    }


class LearnedPool(NamedTuple):
    """The learned ranker's candidates: chunk ids and their :class:`~kbgraph.query.propagation.ranking_learned.Candidate` views, in
    the same order (best first by the weighted sum; BM25 additions after, by weighted sum too)."""

    ids: list[str]
    candidates: list[RankCandidate]
    #: reads the texts of chunk ids, when the adjacency holds them: the gbm and blend rankers read only the texts of
    #: candidates they have not seen before (kbgraph.query.propagation.ranking_gbm ``pool_facts``); None: a statement reads them
    read_texts: Callable[[Sequence[str]], list[str]] | None = None


def learned_pool(
    store: GraphStore,
    settings: Settings,
    seeds: Seeds,
    ranked: list[str],
    terms: dict[str, dict[str, Term]],
    scores: dict[str, float],
    k: int,
    reached: Reached | None = None,
    view: Adjacency | None = None,
) -> LearnedPool:
    """The pool the learned ranker re-orders: the best ``ranker_pool`` (at least ``k``) chunks of the weighted
    sum ``ranked``, plus BM25's top chunks (``seeds.bm25``) not among them. A BM25 addition without a Chunk
    term gets its exact similarity as one, added to ``terms`` and ``scores`` (so ``--explain`` shows it).
    Chunks of incomplete documents leave the pool. ``reached`` (:attr:`Scored.reached`): the titles and exact
    similarities :func:`score_terms` read, so no statement is sent; without it, ``retrieve/chunk_details`` gives
    the titles and ``store.chunk_similarities`` the similarities. ``view`` (the adjacency): where the gbm and blend
    rankers read the candidates' texts (kbgraph.query.propagation.ranking_gbm ``pool_facts``), which then send no statement."""
    head = ranked[: max(settings.retrieval.ranker_pool, k)]
    extra = [cid for cid, _ in seeds.bm25 if cid not in set(head)]
    missing = [cid for cid in extra if "Chunk" not in terms.get(cid, {})]
    similarity = reached.similarity if reached is not None else {}
    known = {cid: sim for cid in missing if (sim := similarity.get(cid)) is not None}
    ask = [cid for cid in missing if cid not in similarity] if reached is None else []
    if ask and seeds.query_vector is not None and settings.retrieval.weight_chunk:
        known.update(store.chunk_similarities(ask, seeds.query_vector))
    for cid in missing:
        if cid in known and settings.retrieval.weight_chunk:
            add_term(terms, cid, "Chunk", cid, "", max(0.0, known[cid]), settings.retrieval.weight_chunk)
    for cid in extra:
        if cid in terms:
            scores[cid] = layer_sum(terms[cid])
    extra = sorted((cid for cid in extra if cid in terms), key=lambda c: (-scores[c], c))
    ids = head + extra
    if reached is not None:  # every candidate of score_terms and every BM25 hit that is served has its title
        titles = reached.titles
    else:
        titles = {cid: str(row.get("document_title") or "") for cid, row in chunk_details(store, ids).items()}
    bm25 = dict(seeds.bm25)
    best = seeds.bm25[0][1] if seeds.bm25 else 0.0
    bm25_rank = {cid: i for i, (cid, _) in enumerate(seeds.bm25)}
    pool_ids = [c for c in ids if c in titles]
    read_texts = view.texts if view is not None and get_ranker(settings.retrieval.ranker).reads_texts else None
    return LearnedPool(
        pool_ids,
        [
            RankCandidate(
                terms={layer: (t[3], t[5]) for layer, t in terms[c].items()},
                title=titles[c],
                weighted=scores[c],
                bm25=bm25[c] / best if c in bm25 and best > 0 else 0.0,
                bm25_rank=bm25_rank.get(c),
            )
            for c in pool_ids
        ],
        read_texts,
    )


def _document_count(store: GraphStore, seeds: Seeds, documents: Collection[str] | None) -> int:
    """The documents an entity hop's specificity counts against: the scope's, else the corpus's (the first
    figure of the corpus generation the seeds were read at; read here when they were not)."""
    if documents is not None:
        return len(documents)
    generation = seeds.generation if seeds.generation is not None else corpus_generation(store)
    return int(generation[0] or 0)
