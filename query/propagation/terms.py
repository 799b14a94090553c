"""The terms of score propagation's formula (kbgraph.query.propagation.propagate, PIKE-RAG §5.2.3, Fig. 8): one
question's table of each candidate chunk's best term per layer, filled from the rows of ``retrieve/layer_candidates``
and ``retrieve/hop_neighbours`` (or the adjacency's same rows), and what those rows said of the chunks they reached."""

from __future__ import annotations

import heapq
import math
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import NamedTuple

from kbgraph.query.models import Seeds
from kbgraph.settings_retrieval import RetrievalSettings
from kbgraph.store import GraphStore
from kbgraph.store.base import Row


class Reached(NamedTuple):
    """What the statements of one question said of the chunks they reached (:func:`score_terms`): ``titles``
    {chunk id: the title of its document ('' without one)} of every chunk a row named, which is every candidate
    that is served (its document 'complete'); ``similarity`` {chunk id: exact cosine with the question, None
    without an embedding} of every chunk whose similarity was read (empty when none was)."""

    titles: dict[str, str]
    similarity: dict[str, float | None]


class TermTable:
    """The terms of one question's candidates (:func:`score_terms`): ``terms`` {chunk id: {layer: its best term
    (score, node_id, text, similarity, weight, factor)}}: only the best term of a layer counts (the maxima of the
    formula), so the others are never kept; each chunk's sum is taken again only when its terms changed."""

    def __init__(self) -> None:
        self.terms: dict[str, dict[str, Term]] = defaultdict(dict)
        self.changed: set[str] = set()  # the chunks whose terms changed since their sum was taken
        self.sums: dict[str, float] = {}
        self.rescored: set[str] = set()  # the chunks whose exact similarity was taken (or that were seeds)

    def add(
        self, chunk_id: str, layer: str, node_id: str, text: str, sim: float, weight: float, factor: float = 1.0
    ) -> None:
        """Record weight · sim · factor as ``layer``'s term of ``chunk_id`` when it beats the layer's best so far
        (weight 0 or sim <= 0 records nothing; as :func:`add_term`)."""
        if weight and sim > 0:
            score = weight * sim * factor
            by_layer = self.terms[chunk_id]
            best = by_layer.get(layer)
            if best is None or score > best[0]:
                by_layer[layer] = (score, node_id, text, sim, weight, factor)
                self.changed.add(chunk_id)

    def rescore(self, n: int, similarity: dict[str, float | None], weight: float) -> dict[str, float]:
        """The Chunk term (exact g(q, c) · ``weight``, from ``similarity``: what this question's rows said) of the
        best ``n`` candidates by their sum that have none yet and were not rescored before (``n`` 0: none).
        Returns {chunk id: the sum of its terms} of every candidate."""
        self._resum()
        if n:
            terms = self.terms
            todo = [c for c in terms if "Chunk" not in terms[c] and c not in self.rescored]
            todo = heapq.nsmallest(n, todo, key=lambda c: (-self.sums[c], c))  # = sorted(...)[:n]
            self.rescored.update(todo)
            for cid in todo:
                sim = similarity.get(cid)
                if sim is not None:
                    self.add(cid, "Chunk", cid, "", max(0.0, sim), weight)
            self._resum()
        return {cid: self.sums[cid] for cid in self.terms}

    def _resum(self) -> None:
        for cid in self.changed:
            self.sums[cid] = layer_sum(self.terms[cid])
        self.changed.clear()


def layer_terms(rows: list[Row], seeds: Seeds, r: RetrievalSettings, table: TermTable) -> None:
    """The layers' terms of ``rows`` (``retrieve/layer_candidates``' or the adjacency's), then the Section,
    Document and DocumentText priors, for chunks that already have a score from the layers above (the Document
    layers: a chunk of a seeded document, or of a document among the question's best cards
    (kbgraph.query.propagation.cards), when that document is 'complete')."""
    layers = seeds.layers
    weights = {
        "AtomicQuestion": r.weight_question,
        "Triple": r.weight_triple,
        "Entity": r.weight_entity,
        "EntityText": r.weight_fulltext,
        "Tag": r.weight_tag,
        "Section": r.weight_section,
    }
    documents: dict[str, str] = {}  # chunk id -> its document's id, when that document is 'complete'
    priors = []
    for row in rows:
        layer = row["layer"]
        if layer == "Section":
            priors.append(row)
            continue
        if row.get("document_id") is not None:
            documents[row["chunk_id"]] = row["document_id"]
        if layer != "Chunk":
            sim, text = layers[layer][row["via"]]
            table.add(row["chunk_id"], layer, row["via"], text, sim, weights[layer])
    for row in priors:
        if row["chunk_id"] in table.terms:
            sim, text = layers["Section"][row["via"]]
            table.add(row["chunk_id"], "Section", row["via"], text, sim, r.weight_section)
    for layer, weight in (("Document", r.weight_document), ("DocumentText", r.weight_document_text)):
        document_seeds = layers.get(layer, {}) if weight else {}
        for cid in list(table.terms) if document_seeds else []:
            if documents.get(cid) in document_seeds:
                sim, text = document_seeds[documents[cid]]
                table.add(cid, layer, documents[cid], text, sim, weight)


def note_rows(store: GraphStore, reached: Reached, rows: list[Row], with_similarity: bool) -> None:
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


def hop_terms(
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


def add_term(
    terms: dict[str, dict[str, Term]],
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
Term = tuple[float, str, str, float, float, float]


def layer_sum(by_layer: dict[str, Term]) -> float:
    """Sum over layers of the best term in each layer."""
    return sum([term[0] for term in by_layer.values()])
