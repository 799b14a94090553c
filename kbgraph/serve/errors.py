"""HTTP statuses of the library's errors, for the routes of ``kbgraph serve`` (kbgraph.serve.app,
kbgraph.serve.routes); each response carries the error's one-line message as ``detail``:

=====================================================  ======
QueryError (empty/over-long question, unknown method)   400
ConfigError (unknown browse query or parameter, ...)    400
invalid settings (pydantic ValidationError)             400
IngestError                                             422
Forbidden (outside serve_ingest_roots or the key scope) 403
KnowledgeBaseNotHosted (no Neo4j database for the KB)   404
KnowledgeBaseNotFound (a read of an unknown KB)         404
LockTimeout (another ingestion holds the lock)          409
SchemaMismatch (index dimension of another embedder)    409
LLMError (the LLM server failed or refused)             502
StoreUnavailable / other StoreError                     503
TooManyOpen (serve_max_open_kbs all in use)             503
any other KBGraphError                                  500
=====================================================  ======
"""

from __future__ import annotations

from kbgraph.errors import (
    ConfigError,
    IngestError,
    KBGraphError,
    KnowledgeBaseNotFound,
    LLMError,
    LockTimeout,
    QueryError,
    SchemaMismatch,
    StoreError,
)
from kbgraph.serve.access import Forbidden
from kbgraph.serve.kbs import KnowledgeBaseNotHosted, TooManyOpen

#: Library error -> HTTP status; the first class the error is an instance of wins (subclasses first).
STATUS: tuple[tuple[type[KBGraphError], int], ...] = (
    (QueryError, 400),
    (Forbidden, 403),
    (KnowledgeBaseNotHosted, 404),
    (KnowledgeBaseNotFound, 404),
    (ConfigError, 400),
    (IngestError, 422),
    (LockTimeout, 409),
    (SchemaMismatch, 409),
    (LLMError, 502),
    (StoreError, 503),
    (TooManyOpen, 503),
)


def status_of(exc: KBGraphError) -> int:
    """The HTTP status of a library error (table in the module docstring; 500 for others)."""
    return next((code for cls, code in STATUS if isinstance(exc, cls)), 500)
