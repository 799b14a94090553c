"""The graph that score propagation walks, held in memory per corpus generation (PIKE-RAG §5.2.3, Fig. 8;
docs/scoring.md, "What one question costs").

Score propagation sends two traversals per question, ``retrieve/layer_candidates`` (the layer seeds' chunks) and
``retrieve/hop_neighbours`` (the second hop). Between two ingestion runs or deletions they read the same
relationships every time, so a long-lived process (``kbgraph serve``, MCP, ``kbgraph eval``) keeps them: an
:class:`Adjacency` is the chunks (their document, its status and title, their embedding) and the relationships
those statements follow (HAS_QUESTION, EXTRACTED_FROM, MENTIONS, TAGGED, HAS_CHUNK from a Section, NEXT,
RELATED), read in pages by ``retrieve/adjacency_chunks``, ``retrieve/adjacency_entities`` and
``retrieve/adjacency_documents``. :meth:`Adjacency.layer_rows` and :meth:`Adjacency.hop_rows` return the rows
the two statements return for the same parameters (the exact similarity as ``similarity``, a cosine, instead of
the store's ``score``), so kbgraph.query.propagation.propagate computes the same terms (tests/test_adjacency.py compares
them on both stores).

kbgraph.query.propagation.adjacency_cache ``shared_adjacency`` keeps one per store object (a knowledge base open in this process), keyed by
kbgraph.query.bm25's ``corpus_generation`` (the document count and the latest ingestion run), so an ingestion run or
a deletion makes the next question read the store again. It is built in a background thread at the second question
of a generation (a one-question process such as ``kbgraph ask`` never builds one); until it is ready, and with
setting ``adjacency_cache`` off, the two statements are sent as before. Like the BM25 index, documents completed
inside an ingestion run that is still going are seen when it finishes. Memory: ~9 KB per chunk on the repo's 2Wiki
corpus (3,463 chunks: 31 MB, of which the unit vectors are 5.3 MB); ~2.4-2.8 s to build there
(docs/benchmarks.md#the-graph-in-memory-adjacency_cache).
"""

from __future__ import annotations

import logging
import math
import sys
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from kbgraph.models import VectorHit
from kbgraph.errors import StoreUnavailable
from kbgraph.store import GraphStore
from kbgraph.store.base import Row
from kbgraph.store.parallel import closing
from kbgraph.store.scope import current_scope

log = logging.getLogger(__name__)

#: Rows per page of the adjacency statements.
PAGE = 2000

#: A hop that reaches a chunk (:meth:`Adjacency.hop_rows`): (score, source, via, text, degree, specificity).
_Hop = tuple[float, str, str, str | None, int, float]


def specificity(documents: int, total: int, idf: float) -> float:
    """How specific an entity is for a hop from one document to another (score propagation's entity hop,
    ``retrieve/hop_neighbours``): its IDF over documents, log(total / documents), over ``idf``, at most 1.

    Args:
        documents: the documents (of the scope) with a chunk that mentions the entity; total: all of them.
        idf: the IDF at which a hop counts in full, log(1 / ``hop_document_share``); 0 turns the weighting off.
    Returns:
        A factor in [0, 1]: 1 with ``idf`` 0 or for an entity of at most ``hop_document_share`` of the documents,
        0 for one of every document, log-linearly in between."""
    if idf <= 0:
        return 1.0
    if documents <= 0 or documents >= total:
        return 0.0 if documents >= total else 1.0
    return min(1.0, math.log(total / documents) / idf)


def _rows(store: GraphStore, statement: str) -> Iterator[Row]:
    """The rows of ``statement`` in pages of :data:`PAGE`; StoreUnavailable as soon as ``store`` begins to close
    (kbgraph.store.parallel: its ``close`` waits for a build in the background)."""
    for row in store.run_pages(statement, PAGE):
        if closing(store):
            raise StoreUnavailable(f"the store at {store.location} is closing")
        yield row


class Adjacency:
    """The chunks and relationships score propagation's two traversals read (module docstring). Read-only once
    built; safe to share between threads."""

    def __init__(self, store: GraphStore) -> None:
        """Read the whole graph of ``store`` (three paged statements). Raises StoreError as ``store.run``."""
        self.ids: list[str] = []
        self.index: dict[str, int] = {}
        self.document: list[str | None] = []  # the chunk's document_id property
        self.served: list[bool] = []  # its Document is 'complete', or it has none
        self.complete_document: list[str | None] = []  # its Document's id when that is 'complete'
        self.title: list[str | None] = []
        # (text, summary, kind, page, section_path, document uri, section id): retrieve/chunk_details' columns
        self.facts: list[tuple[Any, ...]] = []
        self.mentions: list[list[str]] = []
        self.next: list[list[int]] = []  # NEXT, either direction
        self.question_chunks: dict[str, list[int]] = defaultdict(list)
        self.triple_chunks: dict[str, list[int]] = defaultdict(list)
        self.entity_chunks: dict[str, list[int]] = defaultdict(list)
        self.tag_chunks: dict[str, list[int]] = defaultdict(list)
        self.section_chunks: dict[str, list[int]] = defaultdict(list)
        self.document_chunks: dict[str, list[int]] = defaultdict(list)
        vectors: list[Any] = []
        outgoing: list[list[str]] = []
        for row in _rows(store, "retrieve/adjacency_chunks"):
            i = len(self.ids)
            self.ids.append(row["id"])
            self.index[row["id"]] = i
            status = row.get("status")
            self.document.append(row.get("document_id"))
            self.served.append(status is None or status == "complete")
            self.complete_document.append(row.get("document_id") if status == "complete" else None)
            self.title.append(row.get("title"))
            sections = row.get("sections") or []
            self.facts.append(
                (
                    row.get("text"),
                    row.get("summary"),
                    row.get("kind"),
                    row.get("page"),
                    row.get("section_path"),
                    row.get("uri"),
                    sections[-1] if sections else None,
                )
            )
            self.mentions.append([sys.intern(e) for e in dict.fromkeys(row.get("mentions") or [])])  # one str each
            for key, table in (
                ("questions", self.question_chunks),
                ("triples", self.triple_chunks),
                ("mentions", self.entity_chunks),
                ("tags", self.tag_chunks),
                ("sections", self.section_chunks),
            ):
                for node in dict.fromkeys(row.get(key) or []):
                    table[node].append(i)
            if row.get("document_id") is not None:
                self.document_chunks[row["document_id"]].append(i)
            outgoing.append(row.get("next") or [])
            vectors.append(row.get("embedding"))
        self.next = [[] for _ in self.ids]
        for i, targets in enumerate(outgoing):
            for target in targets:
                j = self.index.get(target)
                if j is not None:
                    self.next[i].append(j)
                    self.next[j].append(i)
        dim = next((len(v) for v in vectors if v is not None), 0)
        self.has_vector = np.array([v is not None for v in vectors], dtype=bool)
        matrix = np.zeros((len(vectors), dim), dtype=np.float32)
        for i, v in enumerate(vectors):
            if v is not None:
                matrix[i] = np.asarray(v, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self.unit = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)  # (chunks, dim), L2 = 1
        self._scoped: dict[frozenset[str], Any] = {}  # a document scope's rows (:meth:`top_chunks`)
        self._scoped_lock = threading.Lock()
        self._entity_documents: dict[str, int] = {}  # entity -> its chunks' documents (:meth:`_documents_of`)
        self.name: dict[str, str | None] = {}
        self.titled: set[str] = set()  # entities of type TITLE
        self.related: dict[str, list[str]] = {}
        for row in _rows(store, "retrieve/adjacency_entities"):
            entity = sys.intern(row["id"])  # the same str object as in the chunks' mentions
            self.name[entity] = row.get("name")
            if row.get("type") == "TITLE":
                self.titled.add(entity)
            if row.get("related"):
                self.related[entity] = [sys.intern(o) for o in dict.fromkeys(row["related"])]
        titled: dict[str, list[str]] = defaultdict(list)  # title -> its 'complete' documents
        for row in _rows(store, "retrieve/adjacency_documents"):
            if row.get("title") is not None and row.get("status") == "complete":
                titled[row["title"]].append(row["id"])
        self.documents_titled = dict(titled)
        for name in (
            "question_chunks",
            "triple_chunks",
            "entity_chunks",
            "tag_chunks",
            "section_chunks",
            "document_chunks",
        ):
            setattr(self, name, dict(getattr(self, name)))  # read-only from here: no key made by a lookup

    def __len__(self) -> int:
        return len(self.ids)

    def _allowed(self, params: Row) -> Callable[[int], bool]:
        """Whether chunk i is served and, when ``params`` gives ``documents`` (a document scope's ids, as the
        statements take them), one of theirs."""
        documents = params.get("documents")
        if documents is None:
            return self.served.__getitem__
        allowed = set(documents)
        return lambda i: self.served[i] and self.document[i] in allowed

    def _similarities(self, rows: list[Row], at: list[int], params: Row) -> list[Row]:
        """``rows`` with the exact cosine of each chunk with ``embedding`` as ``similarity`` when ``with_similarity``
        (None for a chunk without an embedding), computed for all of them at once: row ``j`` < len(``at``) is of
        chunk ``at[j]``; the rows after those (Section rows) get none."""
        if not params.get("with_similarity") or not at:
            return rows
        vector = params.get("embedding")
        query = np.zeros(self.unit.shape[1], dtype=np.float32) if vector is None else np.asarray(vector, np.float32)
        size = float(np.linalg.norm(query))
        index = np.fromiter(at, dtype=np.int64, count=len(at))
        cosines = (self.unit[index] @ (query / size if size else query)).tolist()
        has = self.has_vector[index].tolist()
        for row, cosine, known in zip(rows, cosines, has):  # the first len(at) rows
            row["similarity"] = cosine if known else None
        return rows

    def _documents_of(self, entity: str) -> int:
        """The documents (non-null ``document_id``) of the chunks mentioning ``entity``, counted once per entity
        and kept (out of a scope, the entity hop's ``count(DISTINCT b.document_id)``)."""
        count = self._entity_documents.get(entity)
        if count is None:
            document = self.document
            count = len({document[b] for b in self.entity_chunks.get(entity, ())} - {None})
            self._entity_documents[entity] = count  # one int per entity: a race writes the same value twice
        return count

    def details(self, ids: Sequence[str]) -> dict[str, Row]:
        """The rows of ``retrieve/chunk_details`` for ``ids`` (kbgraph.query.graph ``chunk_details``): {chunk id:
        id, text, summary, kind, page, section_path, document_id, document_title, document_uri, section_id} of
        each served chunk among them."""
        out: dict[str, Row] = {}
        scope = current_scope()
        for cid in ids:
            i = self.index.get(cid)
            if i is not None and self.served[i] and (scope is None or scope.allows(self.document[i])):
                text, summary, kind, page, section_path, uri, section = self.facts[i]
                out[cid] = {
                    "id": cid,
                    "text": text,
                    "summary": summary,
                    "kind": kind,
                    "page": page,
                    "section_path": section_path,
                    "document_id": self.document[i],
                    "document_title": self.title[i],
                    "document_uri": uri,
                    "section_id": section,
                }
        return out

    def top_chunks(self, embedding: Sequence[float], within: frozenset[str], k: int) -> list[VectorHit]:
        """The exact top-``k`` served chunks of ``within`` (a document scope's chunk ids) by cosine with
        ``embedding``, best first, ties by id: what ``retrieve/seed_vectors_within`` gives for the Chunk layer,
        from the unit vectors held here (a filtered dense question: a matrix product over the scope's rows)."""
        with self._scoped_lock:
            rows = self._scoped.get(within)
            if rows is None:
                rows = np.array(
                    sorted(
                        i
                        for cid in within
                        if (i := self.index.get(cid)) is not None and self.served[i] and self.has_vector[i]
                    ),
                    dtype=np.int64,
                )
                self._scoped[within] = rows
                while len(self._scoped) > 8:
                    self._scoped.pop(next(iter(self._scoped)))
        if k <= 0 or not len(rows):
            return []
        query = np.asarray(embedding, dtype=np.float32)
        size = float(np.linalg.norm(query))
        cosines = self.unit[rows] @ (query / size if size else query)
        order = sorted(range(len(rows)), key=lambda j: (-float(cosines[j]), self.ids[rows[j]]))[:k]
        return [VectorHit(id=self.ids[rows[j]], label="Chunk", score=float(cosines[j]), properties={}) for j in order]

    def texts(self, ids: Sequence[str]) -> list[str]:
        """The text of each chunk of ``ids`` ("" for a chunk not held), in order: what ``retrieve/pool_texts`` gives
        (kbgraph.query.propagation.ranking_gbm ``pool_texts``)."""
        return [str(self.facts[i][0] or "") if (i := self.index.get(cid)) is not None else "" for cid in ids]

    def layer_rows(self, params: Row) -> list[Row]:
        """The rows of ``retrieve/layer_candidates`` for ``params`` (see that statement): (layer, via, chunk_id,
        document_id, title, similarity) of every served chunk each seed leads to."""
        rows: list[Row] = []
        at: list[int] = []  # the chunk of each row of ``rows``
        ok = self._allowed(params)
        scoped = params.get("documents") is not None
        ids, complete, index = self.ids, self.complete_document, self.index
        titles = self.title if params.get("with_titles") else None

        def add(layer: str, via: str, i: int) -> None:
            if ok(i):
                rows.append(
                    {
                        "layer": layer,
                        "via": via,
                        "document_id": complete[i],
                        "chunk_id": ids[i],
                        "title": titles[i] if titles is not None else None,
                    }
                )
                at.append(i)

        for cid in params.get("chunk_ids") or []:
            if cid in index:
                add("Chunk", cid, index[cid])
        for layer, key, table in (
            ("AtomicQuestion", "question_ids", self.question_chunks),
            ("Triple", "triple_ids", self.triple_chunks),
        ):
            for node in params.get(key) or []:
                for i in table.get(node, ()):
                    add(layer, node, i)
        for layer, key, table, bound in (
            ("Entity", "entity_seeds", self.entity_chunks, params.get("max_degree")),
            ("EntityText", "entity_text_seeds", self.entity_chunks, params.get("max_degree")),
            ("Tag", "tag_seeds", self.tag_chunks, params.get("tag_max_degree")),
        ):
            best: dict[int, tuple[float, str]] = {}  # chunk -> (sim, node): the most similar seed, ties by id
            for seed in params.get(key) or []:
                chunks = table.get(seed["id"], ())
                if scoped:  # the degree within the scope, as the statement counts it
                    chunks = [i for i in chunks if ok(i)]
                if bound is not None and len(chunks) > bound:
                    continue
                sim, node = seed["sim"], seed["id"]
                for i in chunks:
                    known = best.get(i)
                    if known is None or sim > known[0] or (sim == known[0] and node < known[1]):
                        best[i] = (sim, node)
            for i, (_, node) in best.items():
                add(layer, node, i)
        for node in params.get("section_ids") or []:
            for i in self.section_chunks.get(node, ()):
                if ok(i):
                    rows.append(
                        {"layer": "Section", "via": node, "chunk_id": ids[i], "document_id": None, "title": None}
                    )
        return self._similarities(rows, at, params)

    def _entity_hops(self, params: Row, within: Callable[[list[int]], list[int]]) -> dict[int, _Hop]:
        """The entity hop of ``hop_rows``: {chunk: its best hop (score, source, via, text, degree, specificity)},
        ties by source then via, in the order the chunks are first reached; ``within``: the chunks of a list that
        the scope allows (all of them out of a scope)."""
        hops: dict[int, _Hop] = {}
        document, name, bound = self.document, self.name, params.get("max_degree")
        scoped = params.get("documents") is not None
        total, idf = int(params.get("document_count") or 0), float(params.get("specific_idf") or 0.0)
        log2 = math.log(2.0)
        for source in params.get("entity_hop_sources") or []:
            a = self.index.get(source["id"])
            if a is None:
                continue
            sid, own = source["id"], document[a]
            for entity in self.mentions[a]:
                neighbours = within(self.entity_chunks.get(entity, []))
                degree = len(neighbours)
                if not neighbours or (bound is not None and degree > bound):
                    continue
                documents = len({document[b] for b in neighbours} - {None}) if scoped else self._documents_of(entity)
                across = specificity(documents, total, idf)
                damped = source["score"] * log2 / math.log(1.0 + degree)
                text = name.get(entity)
                for b in neighbours:
                    specific = 1.0 if document[b] == own is not None else across
                    if b == a or specific <= 0:
                        continue
                    score = damped * specific
                    known = hops.get(b)
                    if known is None or (-score, sid, entity) < (-known[0], known[1], known[2]):
                        hops[b] = (score, sid, entity, text, degree, specific)
        return hops

    def hop_rows(self, params: Row) -> list[Row]:
        """The rows of ``retrieve/hop_neighbours`` for ``params`` (see that statement): (kind, from_id, via, text,
        chunk_id, degree, title, similarity) of the served chunks each hop reaches."""
        rows: list[Row] = []
        at: list[int] = []  # the chunk of each row
        bound = params.get("max_degree")
        ok = self._allowed(params)
        scoped = params.get("documents") is not None
        ids, document, name = self.ids, self.document, self.name
        titles = self.title if params.get("with_titles") else None

        def row(i: int, kind: str, source: str, via: str, text: str | None, degree: int, specific: float) -> None:
            rows.append(
                {
                    "kind": kind,
                    "from_id": source,
                    "via": via,
                    "text": text,
                    "degree": degree,
                    "specificity": specific,
                    "chunk_id": ids[i],
                    "title": titles[i] if titles is not None else None,
                }
            )
            at.append(i)

        def within(chunks: list[int]) -> list[int]:  # the degree within the scope, as the statement counts it
            return [i for i in chunks if ok(i)] if scoped else chunks

        def spread(kind: str, reached: dict[int, _Hop]) -> None:
            for i, (_, source, via, text, degree, specific) in reached.items():
                if ok(i):
                    row(i, kind, source, via, text, degree, specific)

        spread("Hop", self._entity_hops(params, within))
        for cid in params.get("title_hop_ids") or []:
            a = self.index.get(cid)
            if a is None:
                continue
            for entity in self.mentions[a]:
                if entity not in self.titled or name.get(entity) is None:
                    continue
                for other in self.documents_titled.get(name[entity] or "", ()):
                    if document[a] is None or other == document[a]:  # as `d.id <> a.document_id`
                        continue
                    if scoped and other not in set(params["documents"]):
                        continue
                    for b in self.document_chunks.get(other, ()):
                        if entity in self.mentions[b]:
                            row(b, "TitleHop", cid, entity, name[entity], 1, 1.0)
        for cid in params.get("next_ids") or []:
            a = self.index.get(cid)
            for b in self.next[a] if a is not None else ():
                if ok(b):
                    row(b, "Next", cid, cid, "", 1, 1.0)
        triple: dict[int, _Hop] = {}
        for seed in params.get("triple_hop_seeds") or []:
            for target in self.related.get(seed["id"], ()):
                reached = within(self.entity_chunks.get(target, []))
                degree = len(reached)
                if not reached or (bound is not None and degree > bound):
                    continue
                score = seed["sim"] * math.log(2.0) / math.log(1.0 + degree)
                for b in reached:
                    known = triple.get(b)
                    if known is None or (-score, seed["id"], target) < (-known[0], known[1], known[2]):
                        triple[b] = (score, seed["id"], target, name.get(target), degree, 1.0)
        spread("TripleHop", triple)
        return self._similarities(rows, at, params)
