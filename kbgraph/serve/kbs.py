"""Knowledge-base names and the per-process pool of open knowledge bases (issue 16 §1).

A name selects a knowledge base per request (``/v1/kb/{name}/...``, the MCP tools' ``kb``). It becomes a folder
under ``<home>`` on the embedded store and a database name on Neo4j, so :func:`check_name` refuses anything
that is not a plain name before any file or connection is made: empty, over 64 characters, a path (``/``,
``\\``, ``..``), NUL or other control characters.

:class:`KBPool` keeps up to ``serve_store_connections`` :class:`~kbgraph.kb.KnowledgeBase` instances per name
open for the life of the process, each with a store connection of its own (the embedded FalkorDB server of the
KB folder stays up while a client is connected; its idle timer counts from when the service closes the
connection), all sharing the embedder, which ``kbgraph.embed`` shares process-wide between knowledge bases of
the same model. A store connection is used by one request at a time (the Neo4j driver's session is not
thread-safe), so :meth:`KBPool.use` hands each concurrent request an instance of its own and makes the one past
the bound wait; no lock is held across a request, so an ask waiting for its LLM does not hold up the others
(issue 29). Ingestion opens a connection of its own (:meth:`KBPool.fresh`) so that reads go on while a job
writes (PIKE-RAG §5.1: only complete documents are read).

On Neo4j one knowledge base is one database: the configured knowledge base (``settings.name``) uses
``NEO4J_DATABASE``; any other name needs a database of that name on the server (Neo4j Enterprise; Community
hosts one database), else :class:`KnowledgeBaseNotHosted`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from kbgraph.errors import ConfigError, KBGraphError, StoreError
from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings

MAX_NAME = 64
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# Neo4j database names: ASCII letters, digits, dots and dashes, starting with a letter, 3-63 characters
_NEO4J_DB = re.compile(r"[a-z][a-z0-9.-]{2,62}")


class InvalidName(ConfigError):
    """A knowledge-base name that is not a plain name (HTTP 400)."""


class KnowledgeBaseNotHosted(KBGraphError):
    """The store cannot host this knowledge base (HTTP 404): a Neo4j server without a database for it."""


def check_name(name: object) -> str:
    """``name`` if it is a plain knowledge-base name: 1-64 characters of letters, digits, ``_ . -``, starting
    with a letter or digit, without ``..``. Raises InvalidName (one line naming the rule) otherwise."""
    if not isinstance(name, str) or not name:
        raise InvalidName("the knowledge-base name is empty")
    if len(name) > MAX_NAME:
        raise InvalidName(f"the knowledge-base name has {len(name)} characters; the limit is {MAX_NAME}")
    if not _NAME.fullmatch(name) or ".." in name:
        shown = name.encode("unicode_escape").decode("ascii")[:80]
        raise InvalidName(
            f"invalid knowledge-base name {shown!r}: use letters, digits, '_', '.', '-' "
            "(starting with a letter or digit, no '..')"
        )
    return name


class KBPool:
    """The open knowledge bases of one process, by name, over ``settings`` (the served knowledge base is
    ``settings.name``). Thread-safe. ``close()`` closes every connection."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._idle: dict[str, list[KnowledgeBase]] = {}  # open, not in use
        self._slots: dict[str, threading.BoundedSemaphore] = {}  # serve_store_connections per name
        self._busy: dict[str, int] = {}
        self._opening: dict[str, threading.Lock] = {}  # one connection opened at a time per name
        self._guard = threading.Lock()

    @property
    def default(self) -> str:
        """The knowledge base used when a request names none."""
        return self.settings.name

    def settings_for(self, name: str) -> Settings:
        """The settings of knowledge base ``name`` (checked). On Neo4j a name other than the default maps to the
        database of that name; raises KnowledgeBaseNotHosted when it cannot be one."""
        name = check_name(name)
        s = self.settings
        if s.backend != "neo4j" or name == s.name:
            return s.model_copy(update={"name": name})
        if not _NEO4J_DB.fullmatch(name):
            raise KnowledgeBaseNotHosted(self._not_hosted(name, "it is not a valid Neo4j database name"))
        return s.model_copy(update={"name": name, "neo4j_database": name})

    def _not_hosted(self, name: str, why: str) -> str:
        s = self.settings
        return (
            f"knowledge base {name!r} needs a Neo4j database of its own and {why}: this server serves "
            f"{s.name!r} on database {s.neo4j_database!r} of {s.uri}; Neo4j Community hosts one database, so run "
            f"one `kbgraph serve` per knowledge base (NEO4J_DATABASE), or create database {name!r} on Neo4j "
            "Enterprise, or use the embedded store"
        )

    def fresh(self, name: str) -> KnowledgeBase:
        """A new, connected knowledge base ``name`` outside the pool (the caller closes it). Raises
        InvalidName, KnowledgeBaseNotHosted, StoreUnavailable."""
        settings = self.settings_for(name)
        with self._guard:
            opening = self._opening.setdefault(name, threading.Lock())
        with opening:  # one connection opened at a time per name: the embedded server of a folder starts once
            return self._open(name, settings)

    def _open(self, name: str, settings: Settings) -> KnowledgeBase:
        kb = KnowledgeBase(settings=settings)
        try:
            kb.store  # noqa: B018 - connect now: a missing Neo4j database is found here
        except (ConfigError, StoreError) as exc:
            kb.close()
            missing = any(w in str(exc).lower() for w in ("no database", "not found"))
            if settings.backend == "neo4j" and name != self.settings.name and missing:
                raise KnowledgeBaseNotHosted(self._not_hosted(name, f"the server has none ({exc})")) from exc
            raise
        except BaseException:
            kb.close()
            raise
        return kb

    @contextmanager
    def use(self, name: str) -> Iterator[KnowledgeBase]:
        """``with pool.use(name) as kb:`` a pooled knowledge base ``name`` held by this caller alone until the
        block ends (one library call). Up to ``serve_store_connections`` callers of one name run at once, each
        on a connection of its own (opened on first need, kept for the next caller); one more waits for a free
        one. No lock is held across a call, so an answer that waits for an LLM does not hold up the others."""
        check_name(name)
        with self._guard:
            slots = self._slots.setdefault(name, threading.BoundedSemaphore(self.settings.serve_store_connections))
        with slots:
            with self._guard:
                idle = self._idle.setdefault(name, [])
                kb = idle.pop() if idle else None
                self._busy[name] = self._busy.get(name, 0) + 1
            try:
                if kb is None:
                    kb = self.fresh(name)
                yield kb
            except Exception as exc:
                if kb is not None and (isinstance(exc, StoreError) or not isinstance(exc, KBGraphError)):
                    # the connection may be unusable (lost, half-read): a new one for the next caller
                    kb.close()
                    kb = None
                raise
            finally:
                with self._guard:
                    self._busy[name] -= 1
                    if kb is not None:
                        self._idle[name].append(kb)

    def names(self) -> list[str]:
        """The knowledge bases open now (with a connection idle or in use)."""
        with self._guard:
            return sorted(n for n in self._slots if self._idle.get(n) or self._busy.get(n))

    def close(self) -> None:
        """Close every open knowledge base (the embedded servers then stop after their idle timeout)."""
        with self._guard:
            kbs = [kb for idle in self._idle.values() for kb in idle]
            self._idle = {}
        for kb in kbs:
            try:
                kb.close()
            except Exception:  # noqa: BLE001 - closing on shutdown: nothing left to tell
                pass
