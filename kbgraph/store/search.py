"""The searches of a graph store (``GraphStore`` inherits :class:`Searches`): the vector and full-text top-k of a
layer, the seeds of score propagation in one round trip, and exact similarities. Each is a statement of
``cypher/retrieve/`` run through ``GraphStore.run``, so each reads only the documents of the caller's scope
(kbgraph.store.scope) and, from an index that knows no scope, an over-fetched top cut back to its k."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from kbgraph.models import FULLTEXT_INDEXES, VECTOR_LABELS, FulltextHit, VectorHit
from kbgraph.store.params import Row, fulltext_terms
from kbgraph.store.schema import SEED_FULLTEXT
from kbgraph.store.scope import UNSCOPED_LABELS, current_scope, overfetch

__all__ = ["Searches"]


class Searches:
    """The read-side searches of ``GraphStore`` (module docstring); the store gives :meth:`run`, the vector checks
    and its dialect's parameters."""

    if TYPE_CHECKING:  # given by GraphStore and VectorDimensions (no stub at run time shadows them)

        def run(self, name: str, params: Row | None = None, *, predicate: str | None = None) -> list[Row]: ...

        def check_vector(self, embedding: Sequence[float] | np.ndarray, label: str = "Chunk") -> np.ndarray: ...

        def seed_params(
            self,
            embedding: Sequence[float] | np.ndarray,
            k: int,
            layer_embeddings: Mapping[str, Sequence[float] | np.ndarray] | None = None,
        ) -> Row: ...

        def _vector_params(self, label: str, embedding: np.ndarray, k: int) -> Row: ...

        def _vector_similarity(self, score: float) -> float: ...

        def _fulltext_query(self, terms: list[str]) -> str: ...

        def _fulltext_params(self, label: str, prop: str, terms: list[str], k: int) -> Row: ...

    def vector_search(self, label: str, embedding: Sequence[float], k: int) -> list[VectorHit]:
        """Top-``k`` nodes of ``label`` by cosine similarity to ``embedding`` (PIKE-RAG §5.2.3). Only what complete
        documents hold, as in every retrieval statement: a Document that is not 'complete' (still being written, or
        left 'writing' by a killed run), and a section, chunk, atomic question or triple of one, are left out after
        the top ``k`` (so fewer than ``k`` may come back); entities always. In a document scope
        (kbgraph.store.scope) only the scope's nodes (and entities) come back, from the index's top
        ``overfetch(k, fraction)``.
        Args:
            label: a label of ``VECTOR_LABELS`` (Document, Section, Chunk, AtomicQuestion, Triple, Entity, ...).
            embedding: the query vector, ``dimension_of(label)`` floats.
            k: the number of hits.
        Returns:
            ``VectorHit`` list, best first, score = cosine similarity in [-1, 1].
        Raises:
            ValueError: no vector index on ``label``.
            SchemaMismatch: ``embedding`` has another size than the index.
            StoreError: ``embedding`` holds NaN or infinity, or the statement fails."""
        if label not in VECTOR_LABELS:
            raise ValueError(f"no vector index on {label!r}")
        vec = self.check_vector(embedding, label)
        scope = current_scope()
        wide = k if scope is None or label in UNSCOPED_LABELS else overfetch(k, scope.fraction)
        rows = self.run("retrieve/vector_search", self._vector_params(label, vec, wide))
        hits = [
            VectorHit(
                id=r["id"],
                label=label,
                score=self._vector_similarity(r["score"]),
                properties={key: v for key, v in (r["properties"] or {}).items() if v is not None},
            )
            for r in rows
        ]
        hits.sort(key=lambda h: h.score, reverse=True)
        return hits[:k]

    def seed_vectors(
        self,
        embedding: Sequence[float],
        k: int,
        layer_embeddings: Mapping[str, Sequence[float]] | None = None,
        *,
        scoped_k: int | None = None,
        chunk_k: int | None = None,
        exact: bool = False,
        layers: Sequence[str] = VECTOR_LABELS,
    ) -> dict[str, list[VectorHit | FulltextHit]]:
        """Vector top-``k`` on each vector index in one round trip: the seeds of score propagation (PIKE-RAG §5.2.3).
        Chunks of documents not complete (still or left 'writing') are left out, after each index's top-k.
        Args:
            embedding: the query vector, ``dimension`` floats.
            k: hits per index.
            layer_embeddings: the query vector of a layer searched with another one than ``embedding`` (the static
                model's, setting ``static_layers``; not Chunk; the same vector for each: :meth:`seed_params`).
            scoped_k: in a document scope (kbgraph.store.scope), the layers of documents keep the scope's nodes of
                their index's top ``scoped_k`` (default ``k``; the caller over-fetches and cuts).
            chunk_k: the Chunk index's own top (default ``scoped_k``), for a caller that has the scope's chunk
                seeds already.
            exact: in a scope, the exact top ``k`` of the scope's nodes instead (``retrieve/seed_vectors_within``, of
                ``layers`` only; outside a scope ``exact`` is ignored).
            layers: the layers ``exact`` searches.
        Returns:
            {label of VECTOR_LABELS: hits best first}, score = cosine similarity; each hit's properties hold only
            {'text': its text/name/title/path}.
        Raises:
            SchemaMismatch: a vector of another size.
            StoreError: a vector holding NaN or infinity, or the statement fails.
            ValueError: ``layer_embeddings`` gives the static layers different vectors."""
        out: dict[str, list[VectorHit | FulltextHit]] = {label: [] for label in VECTOR_LABELS}
        params = {
            **self.seed_params(embedding, k, layer_embeddings),
            "scoped_k": scoped_k or k,
            "chunk_k": chunk_k or scoped_k or k,
            "layers": list(layers),
        }
        statement = "retrieve/seed_vectors_within" if exact and current_scope() is not None else "retrieve/seed_vectors"
        for r in self.run(statement, params):
            out[r["layer"]].append(
                VectorHit(
                    id=r["id"],
                    label=r["layer"],
                    score=self._vector_similarity(r["score"]),
                    properties={"text": r["text"]},
                )
            )
        for hits in out.values():
            hits.sort(key=lambda h: h.score, reverse=True)
        return out

    def seed_fulltext(
        self, text: str, k: int, labels: Sequence[str] = ("Chunk", "Entity")
    ) -> dict[str, list[VectorHit | FulltextHit]]:
        """Full-text top-``k`` on Chunk.text and Entity.name (the full-text seeds of PIKE-RAG §5.2.3). Chunks of
        documents not complete are left out. One statement per label (``retrieve/seed_fulltext_chunk``,
        ``retrieve/seed_fulltext_entity``): the seeding asks for each label in a read of its own, at once
        (kbgraph.query.propagation.seeding.seed_layers).
        Args:
            text: the query text (reduced to words).
            k: hits per label.
            labels: 'Chunk', 'Entity' or both.
        Returns:
            {'Chunk.text' / 'Entity.name': hits best first} (raw engine score; properties {'text': ...}); {} when
            ``text`` has no words or ``k`` is 0.
        Raises:
            ValueError: another label."""
        terms = fulltext_terms(text)
        if not (terms and k):
            return {}
        scope = current_scope()
        params = {"query": self._fulltext_query(terms), "k": k}
        out: dict[str, list[VectorHit | FulltextHit]] = {}
        for label in labels:
            if label not in SEED_FULLTEXT:
                raise ValueError(f"no full-text seeds on {label!r}: use one of {sorted(SEED_FULLTEXT)}")
            key, statement = SEED_FULLTEXT[label]
            hits: list[VectorHit | FulltextHit] = [
                FulltextHit(id=r["id"], label=r["layer"], score=float(r["score"]), properties={"text": r["text"] or ""})
                for r in self.run(
                    statement,
                    params
                    if scope is None or label in UNSCOPED_LABELS
                    else {**params, "k": overfetch(k, scope.fraction)},
                )
            ]
            hits.sort(key=lambda h: h.score, reverse=True)
            out[key] = hits[:k]
        return out

    def chunk_similarities(self, ids: Sequence[str], embedding: Sequence[float]) -> dict[str, float]:
        """Exact cosine similarity between ``embedding`` and each Chunk of ``ids`` (computed in the database; no
        index involved).
        Args:
            ids: Chunk ids.
            embedding: the query vector, ``dimension`` floats.
        Returns:
            {chunk id: cosine in [-1, 1]}; unknown ids, chunks without an embedding and chunks of documents not
            complete are left out.
        Raises:
            SchemaMismatch: ``embedding`` has another size.
            StoreError: ``embedding`` holds NaN or infinity, or the statement fails."""
        return self._similarities("retrieve/chunk_similarity", ids, embedding, "Chunk")

    def atomic_question_similarities(self, ids: Sequence[str], embedding: Sequence[float]) -> dict[str, float]:
        """Exact cosine similarity between ``embedding`` and the stored vector of each AtomicQuestion of ``ids`` (the
        vector its index holds: with late chunking, the sentence's in-context vector, not an embedding of its text
        alone; PIKE-RAG §5.3.1 knowledge atomizing).
        Args:
            ids: AtomicQuestion ids.
            embedding: the query vector, ``dimension_of("AtomicQuestion")`` floats.
        Returns:
            {question id: cosine in [-1, 1]}; unknown ids, questions without an embedding and those of documents
            not complete are left out.
        Raises:
            SchemaMismatch: ``embedding`` has another size.
            StoreError: ``embedding`` holds NaN or infinity, or the statement fails."""
        return self._similarities("retrieve/atomic_question_similarity", ids, embedding, "AtomicQuestion")

    def vector_similarity(self, score: float) -> float:
        """A score of this backend's vector functions as a cosine similarity.
        Args:
            score: a score of the vector indexes, ``retrieve/chunk_similarity`` or the ``score`` column of score
                propagation's statements.
        Returns:
            The cosine similarity in [-1, 1]."""
        return self._vector_similarity(score)

    def _similarities(
        self, statement: str, ids: Sequence[str], embedding: Sequence[float], label: str
    ) -> dict[str, float]:
        """{id: cosine in [-1, 1]} of the rows (id, backend vector score) of ``statement`` over ``ids`` (of ``label``)."""
        if not ids:
            return {}
        vec = self.check_vector(embedding, label)
        rows = self.run(statement, {"ids": list(ids), "embedding": vec})
        return {r["id"]: self._vector_similarity(r["score"]) for r in rows if r["score"] is not None}

    def fulltext_search(self, label: str, text: str, k: int, prop: str | None = None) -> list[FulltextHit]:
        """Top-``k`` nodes of ``label`` whose full-text-indexed property matches any word of ``text``. A document
        that is not 'complete' and its chunks are left out after the top ``k``. In a document scope
        (kbgraph.store.scope) only the scope's nodes (and entities) come back, from an over-fetched top.
        Args:
            label: a label with a full-text index (``FULLTEXT_INDEXES``).
            text: user text, reduced to words first, so quotes, operators and brackets are harmless.
            k: the number of hits.
            prop: the indexed property (default: the label's first).
        Returns:
            ``FulltextHit`` list, best first (raw engine score); [] when ``text`` has no words.
        Raises:
            ValueError: no full-text index on ``label``."""
        props = [p for lab, p in FULLTEXT_INDEXES if lab == label]
        if not props:
            raise ValueError(f"no full-text index on {label!r}")
        terms = fulltext_terms(text)
        if not terms:
            return []
        scope = current_scope()
        wide = k if scope is None or label in UNSCOPED_LABELS else overfetch(k, scope.fraction)
        rows = self.run("retrieve/fulltext_search", self._fulltext_params(label, prop or props[0], terms, wide))[:k]
        return [
            FulltextHit(
                id=r["id"],
                label=label,
                score=float(r["score"]),
                properties={key: v for key, v in (r["properties"] or {}).items() if v is not None},
            )
            for r in rows
        ]
