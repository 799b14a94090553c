"""HiRAG's hierarchical Retriever (paper 004 §4.3) on the graph: sparse retrieval at the document level, dense
retrieval at the chunk level inside the chosen document (kbgraph.query.methods.hirag runs it, one candidate at a time).

Document level, eq. 3 (t_c = SparseRetrieval(e, {t_1..t_n})): the entity ``e`` the LLM extracted from the
sub-question is looked up in two full-text indexes,

* Document.title (``store.fulltext_search('Document', e, k)``): the paper's title index;
* Entity.name (``store.fulltext_search('Entity', e, k)``), each hit entity bringing the documents whose chunks
  mention it (``cypher/retrieve/hirag_entity_documents``): a knowledge base of arbitrary files has few titles
  that name an entity, while ingestion records every entity a chunk mentions.

The engine's hits (top ``DOCUMENT_CANDIDATES`` = 20 per index, the authors' BM25 ``topk=20``) are re-ranked by
lexical match as the authors' code does (github.com/2282588541a/HiRAG, code/retreive.py ``wiki_search2``): a
name (a title, or the entity's name) that equals ``e`` or is ``e`` followed by a bracketed qualifier
("Franco Rossi (director)") is an exact match, scored 2; any other name scores the similarity ratio of ``e``
and the name without its bracketed part (``difflib``'s 2·M/T; the authors use Levenshtein's ``ratio``, of the
same form), and documents below ``settings.hirag.hirag_min_match`` (0.8, the authors' "The correlation is too low")
are dropped. A document's match is its best name's. Ties of that score go to title hits, then the engine's
score, then the number of mentioning chunks. A *tie* (§4.3: "high similarity between the extracted entity name
and multiple candidate titles"; Algorithm 1 line 20 ``len(d_s) > th1``) is more than th1 documents whose
*title* is an exact match (the authors' "multiple complete subsets").

Chunk level, eq. 5 (c_s = argmax_{c in d_c} <E(q), E(c)>): every chunk of one document with its exact cosine to
the sub-question's embedding, best first (``cypher/retrieve/hirag_document_chunks``, FalkorDB and Neo4j
variants: the vector indexes cannot be restricted to one document). The chunks are those ingestion made, not
the paper's 100-word splits of a whole article.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from pydantic import BaseModel

from kbgraph.query.graph import text_of
from kbgraph.store import GraphStore

#: Hits taken from each full-text index (the authors' BM25 ``topk=20``).
DOCUMENT_CANDIDATES = 20
#: The score of an exact match (the authors' ``max_similarity = 2``).
EXACT = 2.0

_BRACKETS = re.compile(r"\s*\([^)]*\)")


class DocumentMatch(BaseModel):
    """A candidate document of the document level: ``match`` (2 = exact, else a ratio in [0, 1]), the name it
    matched by (``via`` 'title': its title; 'entity': an entity its chunks mention), the full-text engine's
    score of that name (``engine``; not comparable across indexes) and, for 'entity', the mentioning chunks."""

    document_id: str
    title: str
    match: float
    via: str
    name: str
    engine: float = 0.0
    mentions: int = 0
    exact_title: bool = False


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def name_match(entity: str, name: str) -> float:
    """How well ``name`` matches ``entity`` (authors' ``wiki_search2``): EXACT (2.0) when, case and spacing
    ignored, it equals the entity or is the entity followed by " (" (a bracketed qualifier); otherwise the
    similarity ratio in [0, 1] of the entity and the name without bracketed parts."""
    e, n = _norm(entity), _norm(name)
    if not e or not n:
        return 0.0
    if n == e or n.startswith(e + " ("):
        return EXACT
    return difflib.SequenceMatcher(None, e, _norm(_BRACKETS.sub("", name))).ratio()


def document_candidates(
    store: GraphStore, entity: str, *, min_match: float, k: int = DOCUMENT_CANDIDATES
) -> list[DocumentMatch]:
    """Document level of the Retriever for ``entity``: the documents whose title, or an entity their chunks
    mention, matches it by at least ``min_match`` (module doc), best first. [] for an entity without words."""
    if not entity.strip():
        return []
    best: dict[str, DocumentMatch] = {}

    def offer(m: DocumentMatch) -> None:
        old = best.get(m.document_id)
        if old is None or _rank(m) < _rank(old):
            best[m.document_id] = m

    for hit in store.fulltext_search("Document", entity, k):
        title = text_of(hit.properties.get("title"))
        score = name_match(entity, title)
        offer(
            DocumentMatch(
                document_id=hit.id,
                title=title,
                match=score,
                via="title",
                name=title,
                engine=float(hit.score),
                exact_title=score == EXACT,
            )
        )
    entities = store.fulltext_search("Entity", entity, k)
    if entities:
        engine = {h.id: float(h.score) for h in entities}
        rows = store.run("retrieve/hirag_entity_documents", {"ids": list(engine), "limit": 5 * k})
        for row in rows:
            name = text_of(row["name"])
            offer(
                DocumentMatch(
                    document_id=row["document_id"],
                    title=text_of(row["title"]),
                    match=name_match(entity, name),
                    via="entity",
                    name=name,
                    engine=engine.get(row["entity_id"], 0.0),
                    mentions=int(row["mentions"]),
                )
            )
    return sorted((m for m in best.values() if m.match >= min_match), key=_rank)


def _rank(m: DocumentMatch) -> tuple[float, bool, float, int, str, str]:
    return (-m.match, m.via != "title", -m.engine, -m.mentions, m.title, m.document_id)


def tied(candidates: Sequence[DocumentMatch], th1: int) -> list[DocumentMatch]:
    """The documents whose title is an exact match, when there are more than ``th1`` of them (Algorithm 1
    line 20: semantic incompleteness, the sub-question is rewritten); else []."""
    exact = [m for m in candidates if m.exact_title]
    return exact if len(exact) > th1 else []


def document_chunks(store: GraphStore, document_id: str, vector: Sequence[float]) -> list[tuple[str, float]]:
    """Chunk level of the Retriever: (chunk id, cosine to ``vector``) of every chunk of the document that has
    an embedding, best first (ties in document order); [] for an unknown or incomplete document."""
    params = {"document_id": document_id, "embedding": store.check_vector(vector)}
    rows = store.run("retrieve/hirag_document_chunks", params)
    return [(row["id"], float(row["score"])) for row in rows if row["score"] is not None]
