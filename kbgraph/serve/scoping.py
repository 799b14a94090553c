"""The documents a request of ``kbgraph serve`` may read (issue 58): the API key's document filter, and the
request's own ``filters`` within it.

A key made with ``kbgraph serve keys add --where ...`` (kbgraph.serve.access ``KeyScope.where``) reads only the
documents its filter allows. Every read route that uses a knowledge base opens it with :func:`scoped`: the key's
filter is resolved to a :class:`~kbgraph.store.scope.DocumentScope` (kbgraph.query.scope, cached per corpus
generation) and the body runs inside ``kbgraph.store.scope.within(scope)``, so every statement that declares
``$documents`` (the chunk lookup, the documents list, the browse queries, every retrieval statement) sees the
key's documents only, and a chunk outside them is "no such chunk". A request's own filter (the ``filters`` of ask
and search, an MCP tool's ``filters``) is joined to the key's by :func:`request_filter` (``and``): it narrows the
key's documents, never widens them. Routes that do not open a knowledge base this way are refused to a
document-scoped key (kbgraph.serve.authz ``DOCUMENT_SCOPED``: fail closed).

A key filter that the knowledge base cannot apply (a metadata key no document of it has, a value of another type)
is a 403: the key reads nothing there. An invalid request filter is a 400 naming what is wrong (QueryError).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kbgraph.errors import QueryError
from kbgraph.filters import Filter, all_of, parse_filter
from kbgraph.kb import KnowledgeBase
from kbgraph.models import StoreStats
from kbgraph.serve.access import Forbidden, KeyScope
from kbgraph.serve.kbs import KBPool
from kbgraph.store.scope import DocumentScope, within

__all__ = ["key_scope", "parse_request_filter", "request_filter", "scoped", "scoped_stats"]


def parse_request_filter(data: Any) -> Filter | None:
    """A request's ``filters`` (the JSON filter model as a dict, or None) as a checked filter. Raises QueryError
    (400) naming what is wrong: an unknown ``op``, a missing field, a value of another type, text that is not
    Unicode (a lone surrogate)."""
    if data is None:
        return None
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError):
        raise QueryError(
            "invalid filter: it holds text that is not Unicode (a lone surrogate) or a value JSON cannot carry"
        ) from None
    return parse_filter(data)


def request_filter(key: KeyScope | None, data: Any = None) -> Filter | None:
    """The filter a request reads with: the key's document filter and the request's own (``data``, as
    :func:`parse_request_filter` takes it), both required; None when neither has one. Raises QueryError for an
    invalid request filter."""
    return all_of(key.documents if key is not None else None, parse_request_filter(data))


def key_scope(kb: KnowledgeBase, key: KeyScope | None) -> DocumentScope | None:
    """The documents of ``kb`` that ``key`` may read (None: every document, for no key or a key without
    ``where``). Raises Forbidden (403) when the key's filter cannot be applied to this knowledge base (a key no
    document has, a value of another type): the key reads nothing here."""
    filt = key.documents if key is not None else None
    if key is None or filt is None:
        return None
    try:
        return kb.scope(filt)
    except QueryError as exc:
        raise Forbidden(
            f"the API key {key.name!r} is scoped to documents ({key.describe_where()}) and knowledge "
            f"base {kb.name!r} cannot apply that filter ({exc}): the key reads nothing here"
        ) from None


@contextmanager
def scoped(pool: KBPool, name: str, key: KeyScope | None) -> Iterator[KnowledgeBase]:
    """``with scoped(pool, name, key) as kb:`` knowledge base ``name`` of ``pool`` (``KBPool.use``) with the body
    inside the key's document scope (:func:`key_scope`; no scope for a key without ``where``). Raises what
    ``KBPool.use`` and :func:`key_scope` raise."""
    with pool.use(name) as kb, within(key_scope(kb, key)):
        yield kb


def scoped_stats(kb: KnowledgeBase, scope: DocumentScope) -> StoreStats:
    """The counts a document-scoped key sees: its documents and their chunks (``nodes``: Document, Chunk); the
    knowledge base's other counts (entities shared with other documents, relationships) and the store's location
    are not shown."""
    nodes = {"Chunk": len(scope.chunks), "Document": len(scope.documents)}
    return StoreStats(backend=kb.store.backend, location="", nodes=nodes, relationships={})
