"""The documents a question may read (issue 58: filters and document-scoped keys), carried to every statement.

A :class:`DocumentScope` is the set of Documents a filter allows (kbgraph.filters, resolved by
kbgraph.query.scope) and the chunks they hold. :func:`within` makes it the scope of everything the calling code runs
in its context: ``GraphStore.run`` gives every statement that declares ``$documents`` the scope's document ids as
that parameter (None outside a scope: the statement reads everything), so the retrieval statements of every method
(seeds, propagation's two traversals, the chunk details, the similarities) see only the allowed documents without
each method passing it on. Statements that do not declare ``$documents`` (ingestion, the adjacency and BM25 builds,
administration) are never restricted. The scope travels with :mod:`contextvars` (kbgraph.store.parallel's reads
copy the caller's context), so one thread's question never scopes another's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

__all__ = ["SCOPED", "UNSCOPED_LABELS", "DocumentScope", "current_scope", "intersect", "overfetch", "within"]

#: The parameter by which a statement declares that it reads only the scope's documents (``GraphStore.run``).
SCOPED = "$documents"
#: Labels of no one document (shared by every document): never restricted by a scope, and not over-fetched.
UNSCOPED_LABELS = frozenset({"Entity", "Tag"})
#: Over-fetch under a scope: a top-k read from an index that knows no scope asks for k / fraction x this margin ...
OVERFETCH_MARGIN = 1.5
#: ... and at most this many times k (a scope of 1 % of the chunks reads 30 x k, not 150 x k).
OVERFETCH_MAX = 30


def overfetch(k: int, fraction: float) -> int:
    """How many of an index's top nodes to read so that about ``k`` of them fall in a scope holding ``fraction``
    (0 < fraction <= 1) of the knowledge base: ceil(k / fraction x :data:`OVERFETCH_MARGIN`), at least ``k``, at
    most ``k`` x :data:`OVERFETCH_MAX`. A small scope is better read exactly (kbgraph.query.propagation.seeding)."""
    if k <= 0:
        return k
    wanted = math.ceil(k / max(fraction, 1e-9) * OVERFETCH_MARGIN)
    return max(k, min(wanted, k * OVERFETCH_MAX))


@dataclass(frozen=True)
class DocumentScope:
    """The allowed ``documents`` (Document ids, each 'complete') and their ``chunks`` (Chunk ids), out of
    ``total_chunks`` chunks in the knowledge base; ``label``: the filter as written, for messages; ``generation``: the
    corpus generation it was resolved at (a question in it reads the graph in memory of that generation)."""

    documents: frozenset[str]
    chunks: frozenset[str]
    total_chunks: int
    label: str = ""
    #: the corpus generation it was resolved at (kbgraph.query.bm25 ``corpus_generation``), None if unknown
    generation: tuple[object, ...] | None = field(default=None, compare=False)
    _ids: list[str] = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_ids", sorted(self.documents))

    @property
    def document_ids(self) -> list[str]:
        """The allowed document ids, sorted: the ``$documents`` parameter (one list per scope, not per statement)."""
        return self._ids

    @property
    def fraction(self) -> float:
        """The allowed chunks' share of the knowledge base's, in [0, 1] (1 for an empty knowledge base)."""
        return len(self.chunks) / self.total_chunks if self.total_chunks else 1.0

    def allows(self, document_id: str | None) -> bool:
        """Whether a chunk of ``document_id`` is in scope (a chunk of no document never is)."""
        return document_id is not None and document_id in self.documents


_SCOPE: ContextVar[DocumentScope | None] = ContextVar("kbgraph_document_scope", default=None)


def intersect(a: DocumentScope | None, b: DocumentScope | None) -> DocumentScope | None:
    """The documents both scopes allow (None is every document: the other scope, or None for two Nones)."""
    if a is None or b is None:
        return b if a is None else a
    label = " and ".join(x for x in (a.label, b.label) if x)
    return DocumentScope(
        a.documents & b.documents,
        a.chunks & b.chunks,
        max(a.total_chunks, b.total_chunks),
        label,
        a.generation if a.generation == b.generation else None,
    )


def current_scope() -> DocumentScope | None:
    """The scope of the calling context (:func:`within`), or None: every document."""
    return _SCOPE.get()


@contextmanager
def within(scope: DocumentScope | None) -> Iterator[DocumentScope | None]:
    """Run the body with ``scope`` as the calling context's scope (None: every document; a scope inside a scope
    replaces it for the body: callers narrow with :func:`intersect` first, as ``KnowledgeBase.scope`` does)."""
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)
