"""kbgraph's exceptions. Every error a user can cause or fix is a KBGraphError whose message is one line
that names the fix; the CLI prints it without a traceback (unless --debug) and exits with ``exit_code``."""

from __future__ import annotations


class KBGraphError(Exception):
    """Base class. ``exit_code`` is what the CLI exits with."""

    exit_code = 1


class ConfigError(KBGraphError):
    """A setting is missing or invalid."""

    exit_code = 2


class StoreError(KBGraphError):
    """The graph store cannot be reached, started or used."""


class StoreUnavailable(StoreError):
    """The store could not be connected to (unreachable, wrong password, server will not start)."""


class StoreTransient(StoreError):
    """A statement failed for a passing reason the database says may succeed when the unit of work is run again
    (Neo4j's ``Neo.TransientError.*``: a deadlock between concurrent writers, a lock wait timeout)."""


class SchemaMismatch(StoreError):
    """The graph's schema conflicts with the configuration (e.g. vector index dimension)."""


class KnowledgeBaseNotFound(KBGraphError):
    """A read of a knowledge base that does not exist: nothing is made for a read (no folder, no server, no
    database); an ingest into it makes it. Exit code 66 (sysexits EX_NOINPUT); HTTP 404 in ``kbgraph serve``."""

    exit_code = 66


class CypherNotFound(KBGraphError):
    """No .cypher file by that name."""


class Neo4jLocalError(KBGraphError):
    """The local Neo4j server cannot be built, started or stopped."""


class IngestError(KBGraphError):
    """A document cannot be ingested (corrupt, encrypted, empty, too large, unsupported)."""


class QueryError(KBGraphError):
    """A question cannot be answered as asked (empty, too long)."""


class LLMError(KBGraphError):
    """The LLM server failed, refused the request, or gave an answer that cannot be used."""


class LLMContextError(LLMError):
    """A prompt does not fit the LLM's context window (the message names the prompt and its token count)."""


class LLMServerError(KBGraphError):
    """The local LLM server (llama.cpp's llama-server, ``kbgraph llm``) cannot be found, started or stopped."""


class LockTimeout(KBGraphError):
    """Another kbgraph process holds the lock."""

    exit_code = 75
