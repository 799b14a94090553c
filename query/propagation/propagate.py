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
                                                            already have a score from the layers above

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
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Sequence
from typing import NamedTuple

from kbgraph.query.propagation.adjacency import Adjacency, shared_adjacency
from kbgraph.query.bm25 import corpus_generation
from kbgraph.query.graph import chunk_details, distinct_top, scored_chunk
from kbgraph.query.models import Contribution, RankerTerm, ScoredChunk, Seeds
from kbgraph.query.propagation.ranking_learned import Candidate as RankCandidate
from kbgraph.query.propagation.rankers import get_ranker
from kbgraph.settings import Settings
from kbgraph.settings_groups import RetrievalSettings
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


class Reached(NamedTuple):
    """What the statements of one question said of the chunks they reached (:func:`score_terms`): ``titles``
    {chunk id: the title of its document ('' without one)} of every chunk a row named, which is every candidate
    that is served (its document 'complete'); ``similarity`` {chunk id: exact cosine with the question, None
    without an embedding} of every chunk whose similarity was read (empty when none was)."""

    titles: dict[str, str]
    similarity: dict[str, float | None]


class Scored(NamedTuple):
    """The formula's result (:func:`score_terms`): {chunk id: {layer: its best term}}, {chunk id: weighted sum
    S(c)}, chunk ids by S(c) best first (ties by id), and what the statements said of the chunks they reached
    (:class:`Reached`: the titles and exact similarities :func:`learned_pool` needs, BM25's hits included)."""

    terms: dict[str, dict[str, _Term]]
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
    process holds in memory (kbgraph.query.propagation.adjacency ``shared_adjacency``, looked up once per question by the
    caller), which gives the same rows instead."""
    r = settings.retrieval
    scope = current_scope()  # a filter's documents (kbgraph.store.scope): only their chunks are candidates
    documents_in_scope = None if scope is None else scope.document_ids
    # chunk id -> layer -> its best term (score, node_id, text, similarity, weight, factor): only the best
    # term of a layer counts (the maxima of the formula), so the others are never kept.
    terms: dict[str, dict[str, _Term]] = defaultdict(dict)
    changed: set[str] = set()  # the chunks whose terms changed since their sum was taken (exact_chunk_terms)

    def add(chunk_id: str, layer: str, node_id: str, text: str, sim: float, weight: float, factor: float = 1.0) -> None:
        if weight and sim > 0:  # as _add, and the chunk's sum to take again
            score = weight * sim * factor
            by_layer = terms[chunk_id]
            best = by_layer.get(layer)
            if best is None or score > best[0]:
                by_layer[layer] = (score, node_id, text, sim, weight, factor)
                changed.add(chunk_id)

    layers = seeds.layers
    for cid, (sim, _) in layers.get("Chunk", {}).items():
        add(cid, "Chunk", cid, "", sim, r.weight_chunk)
    for cid, (sim, _) in layers.get("FullText", {}).items():
        add(cid, "FullText", cid, "", sim, r.weight_fulltext)

    def ids(layer: str, weight: float) -> list[str]:
        return list(layers.get(layer, {})) if weight else []

    def sims(layer: str, weight: float) -> list[Row]:
        return [{"id": node, "sim": sim} for node, (sim, _) in layers.get(layer, {}).items()] if weight else []

    exact = bool(r.rescore_k and r.weight_chunk and seeds.query_vector is not None)
    vector = store.check_vector(seeds.query_vector) if seeds.query_vector is not None and r.weight_chunk else None
    reached = Reached({}, {})
    documents: dict[str, str] = {}  # chunk id -> its document's id, when that document is 'complete'

    # every layer's seeds -> their chunks, and what is known of each candidate, in one statement; the seeded
    # chunks' own rows only when something needs them (the learned ranker's titles, BM25's hits, a Document prior,
    # the exact similarity of a full-text seed): the dense baseline sends no statement here
    want_titles = get_ranker(r.ranker).needs_pool
    document_seeds = layers.get("Document", {}) if r.weight_document else {}
    seeded = set(layers.get("Chunk", {}))
    own_rows = want_titles or bool(seeds.bm25 or document_seeds) or (exact and any(c not in seeded for c in terms))
    params: Row = {
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
        "documents": documents_in_scope,  # a document scope's ids (the statements get it from the store too)
        # exact similarities for the rescoring, and for BM25's hits (the learned pool) even without rescoring
        "with_similarity": vector is not None and (exact or bool(seeds.bm25)),
    }
    params["embedding"] = vector if params["with_similarity"] else None
    weights = {
        "AtomicQuestion": r.weight_question,
        "Triple": r.weight_triple,
        "Entity": r.weight_entity,
        "EntityText": r.weight_fulltext,
        "Tag": r.weight_tag,
        "Section": r.weight_section,
    }
    priors = []
    if any(params[key] for key in LAYER_PARAMS):
        rows = view.layer_rows(params) if view is not None else store.run("retrieve/layer_candidates", params)
        _note(store, reached, rows, params["with_similarity"])
        for row in rows:
            layer = row["layer"]
            if layer == "Section":
                priors.append(row)
                continue
            if row.get("document_id") is not None:
                documents[row["chunk_id"]] = row["document_id"]
            if layer != "Chunk":
                sim, text = layers[layer][row["via"]]
                add(row["chunk_id"], layer, row["via"], text, sim, weights[layer])
    # Section and Document priors, for chunks that already have a score from the layers above (the Document
    # layer: a chunk of a seeded document, when that document is 'complete')
    for row in priors:
        if row["chunk_id"] in terms:
            sim, text = layers["Section"][row["via"]]
            add(row["chunk_id"], "Section", row["via"], text, sim, r.weight_section)
    for cid in list(terms) if document_seeds else []:
        if documents.get(cid) in document_seeds:
            sim, text = document_seeds[documents[cid]]
            add(cid, "Document", documents[cid], text, sim, r.weight_document)

    sums: dict[str, float] = {}  # chunk id -> the sum of its terms, taken again when they change

    def exact_chunk_terms() -> dict[str, float]:
        """The Chunk term of the best ``rescore_k`` candidates that have none yet: exact g(q, c), as the rows
        of this question's statements gave it. Returns {chunk id: the sum of its terms} of every candidate."""
        for cid in changed:
            sums[cid] = _layer_sum(terms[cid])
        changed.clear()
        if exact:
            todo = [c for c in terms if "Chunk" not in terms[c] and c not in rescored]
            todo = heapq.nsmallest(r.rescore_k, todo, key=lambda c: (-sums[c], c))  # = sorted(...)[:rescore_k]
            rescored.update(todo)
            for cid in todo:
                sim = reached.similarity.get(cid)
                if sim is not None:
                    add(cid, "Chunk", cid, "", max(0.0, sim), r.weight_chunk)
            for cid in changed:
                sums[cid] = _layer_sum(terms[cid])
            changed.clear()
        return {cid: sums[cid] for cid in terms}

    rescored: set[str] = set(layers.get("Chunk", {}))
    s1 = exact_chunk_terms()
    sources = heapq.nsmallest(max(r.hop_from, k), s1, key=lambda c: (-s1[c], c))  # the best, as sorted(...)[:n]

    # the second hop (shared entities, title links, NEXT, the question entities' triples): one statement
    hop_sources = sources[: r.hop_from]
    relation: dict[str, float] = {}  # the triple hop's sources: the question's entities at their best similarity
    for layer in ("Entity", "EntityText") if r.weight_triple_hop else ():
        for entity, (sim, _) in layers.get(layer, {}).items():
            relation[entity] = max(sim, relation.get(entity, 0.0))
    params = {
        "entity_hop_sources": [{"id": c, "score": s1[c]} for c in hop_sources] if r.weight_hop else [],
        "title_hop_ids": hop_sources if r.weight_title_hop else [],
        "next_ids": sources[: max(r.hop_from, k)] if r.weight_next else [],
        "triple_hop_seeds": [{"id": e, "sim": sim} for e, sim in relation.items() if sim > 0],
        "max_degree": r.max_entity_degree,
        # an entity hop from one document to another: weighted by the entity's IDF over the documents
        "document_count": _document_count(store, seeds, documents_in_scope),
        "specific_idf": -math.log(r.hop_document_share) if 0 < r.hop_document_share < 1 else 0.0,
        "with_titles": want_titles,
        "documents": documents_in_scope,
        "with_similarity": exact,
        "embedding": vector if exact else None,
    }
    rows = (
        []
        if not (s1 and any(params[x] for x in HOP_PARAMS))
        else (view.hop_rows(params) if view is not None else store.run("retrieve/hop_neighbours", params))
    )
    _note(store, reached, rows, exact)
    _hop_terms(rows, add, s1, relation, r)
    scores = exact_chunk_terms()  # the chunks the hops reached
    ranked = sorted(sorted(scores), key=scores.__getitem__, reverse=True)  # by S(c), ties by id (a stable sort)
    return Scored(terms, scores, ranked, reached)


def _note(store: GraphStore, reached: Reached, rows: list[Row], with_similarity: bool) -> None:
    """Keep what each row of ``rows`` (but a Section prior's) says of its chunk in ``reached``: its document's
    title, and with ``with_similarity`` its exact similarity (the adjacency's cosine, or the store's score)."""
    titles, similarity = reached.titles, reached.similarity
    for row in rows:
        if row.get("layer") == "Section":
            continue
        cid = row["chunk_id"]
        titles[cid] = str(row.get("title") or "")
        if with_similarity:
            if "similarity" in row:  # the adjacency's row: the cosine itself
                similarity[cid] = row["similarity"]
            else:
                score = row.get("score")
                similarity[cid] = None if score is None else store.vector_similarity(score)


def _hop_terms(
    rows: list[Row], add: Callable[..., None], s1: dict[str, float], relation: dict[str, float], r: RetrievalSettings
) -> None:
    """The second hop's terms of ``rows`` (``retrieve/hop_neighbours``' or the adjacency's), each through ``add``
    (score_terms' own): from a source's S1 (``s1``), or a question entity's similarity (``relation``)."""
    fanout = Counter((row["from_id"], row["via"]) for row in rows if row["kind"] == "TitleHop")
    damping: dict[int, float] = {}  # degree -> 1 / log2(1 + degree)
    for row in rows:
        kind, source = row["kind"], row["from_id"]
        if kind == "Hop":  # damped by the entity's degree and, into another document, by its specificity
            degree = int(row["degree"])
            if degree not in damping:
                damping[degree] = math.log2(1 + max(1, degree))
            factor = float(row.get("specificity", 1.0)) / damping[degree]
            add(row["chunk_id"], "Hop", source, row["text"], s1[source], r.weight_hop, factor)
        elif kind == "TitleHop":  # a source's title link is shared by the n chunks it reaches
            factor = 1.0 / fanout[(source, row["via"])]
            add(row["chunk_id"], "TitleHop", source, row["text"], s1[source], r.weight_title_hop, factor)
        elif kind == "TripleHop":  # from a question entity along a triple to the chunks mentioning its object
            factor = 1.0 / math.log2(1 + max(1, int(row["degree"])))
            add(row["chunk_id"], "TripleHop", row["via"], row["text"], relation[source], r.weight_triple_hop, factor)
        else:
            add(row["chunk_id"], "Next", source, "", s1[source], r.weight_next)


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
    terms: dict[str, dict[str, _Term]],
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
            _add(terms, cid, "Chunk", cid, "", max(0.0, known[cid]), settings.retrieval.weight_chunk)
    for cid in extra:
        if cid in terms:
            scores[cid] = _layer_sum(terms[cid])
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


def _add(
    terms: dict[str, dict[str, _Term]],
    chunk_id: str,
    layer: str,
    node_id: str,
    text: str,
    sim: float,
    weight: float,
    factor: float = 1.0,
) -> None:
    """Record a term weight · sim · factor of ``layer`` for ``chunk_id`` when it beats the layer's best so far
    (the maxima of the formula); weight 0 or sim <= 0 records nothing."""
    if weight and sim > 0:
        score = weight * sim * factor
        best = terms[chunk_id].get(layer)
        if best is None or score > best[0]:
            terms[chunk_id][layer] = (score, node_id, text, sim, weight, factor)


#: One term of a chunk's score: (score, node_id, text, similarity, weight, factor).
_Term = tuple[float, str, str, float, float, float]


def _layer_sum(by_layer: dict[str, _Term]) -> float:
    """Sum over layers of the best term in each layer."""
    return sum([term[0] for term in by_layer.values()])
