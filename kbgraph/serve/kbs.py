"""Knowledge-base names and the per-process pool of open knowledge bases.

A name selects a knowledge base per request (``/v1/kb/{name}/...``, the MCP tools' ``kb``). It becomes a folder
under ``<home>`` on the embedded store and a database name on Neo4j, so :func:`check_name` refuses anything
that is not a plain name before any file or connection is made: empty, over 64 characters, a path (``/``,
``\\``, ``..``), NUL or other control characters.

:class:`KBPool` keeps one :class:`~kbgraph.kb.KnowledgeBase` per name open for the life of the process and
shares it between the requests of that name: the store is safe to share between threads and holds a
pool of ``serve_store_connections`` connections (FalkorDB: a bounded ``BlockingConnectionPool``; Neo4j: a
driver session per statement or unit of work), each store call borrowing one for its round trip, so no connection
or lock is held across a request and an ask waiting for its LLM holds up no other; the embedder (an ONNX session,
thread-safe) is shared too, and ``kbgraph.embed`` shares it between knowledge bases of the same model; the LLM
requests are bounded per endpoint by ``llm_max_concurrency`` (kbgraph.llm.limit), not here. The embedded
FalkorDB server of a KB folder stays up while the pool's connections are open; its idle timer counts from when
the service closes them. Ingestion opens a store of its own (:meth:`KBPool.fresh`) so that reads go on while a
job writes (PIKE-RAG §5.1: only complete documents are read).

On Neo4j one knowledge base is one database: the configured knowledge base (``settings.name``) uses
``NEO4J_DATABASE``; any other name needs a database of that name on the server (Neo4j Enterprise; Community
hosts one database), else :class:`KnowledgeBaseNotHosted`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from kbgraph.errors import ConfigError, KBGraphError, StoreError, StoreUnavailable
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
        self._open: dict[str, _Open] = {}  # name -> its shared knowledge base
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
        if s.store.backend != "neo4j" or name == s.name:
            return s.updated({"name": name})
        if not _NEO4J_DB.fullmatch(name):
            raise KnowledgeBaseNotHosted(self._not_hosted(name, "it is not a valid Neo4j database name"))
        return s.updated({"name": name, "neo4j_database": name})

    def _not_hosted(self, name: str, why: str) -> str:
        s = self.settings
        return (
            f"knowledge base {name!r} needs a Neo4j database of its own and {why}: this server serves "
            f"{s.name!r} on database {s.store.neo4j_database!r} of {s.store.uri}; Neo4j Community hosts one database, so run "
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
            return self._open_kb(name, settings)

    def _open_kb(self, name: str, settings: Settings) -> KnowledgeBase:
        kb = KnowledgeBase(settings=settings)
        try:
            kb.store  # noqa: B018 - connect now: a missing Neo4j database is found here
        except (ConfigError, StoreError) as exc:
            kb.close()
            missing = any(w in str(exc).lower() for w in ("no database", "not found"))
            if settings.store.backend == "neo4j" and name != self.settings.name and missing:
                raise KnowledgeBaseNotHosted(self._not_hosted(name, f"the server has none ({exc})")) from exc
            raise
        except BaseException:
            kb.close()
            raise
        return kb

    @contextmanager
    def use(self, name: str) -> Iterator[KnowledgeBase]:
        """``with pool.use(name) as kb:`` knowledge base ``name`` for one library call (a request), any number of
        callers at once. The store is opened on first need and shared (``KnowledgeBase.share``): each store call
        borrows one of its ``serve_store_connections`` connections and gives it back, so nothing is held across
        the call and an answer that waits for its LLM holds up no other; the ``kb`` itself (``last_saved``, an
        ``llm`` assigned to it) is this caller's. A lost connection (StoreUnavailable) retires the shared store:
        the next caller opens a new one (starting the embedded server again if it stopped), the old one is closed
        when its last caller leaves."""
        check_name(name)
        entry = self._checkout(name)
        try:
            yield entry.kb.share()
        except StoreUnavailable:
            with self._guard:
                entry.retired = True
                if self._open.get(name) is entry:
                    del self._open[name]
            raise
        finally:
            with self._guard:
                entry.users -= 1
                last = entry.retired and entry.users == 0
            if last:
                entry.kb.close()

    def shared(self, name: str) -> KnowledgeBase:
        """The open knowledge base ``name`` (opened now if none) whose store, embedder and LLM every request's
        ``kb`` shares: an LLM assigned to it serves the requests that follow (e.g. a scripted LLM in tests)."""
        entry = self._checkout(check_name(name))
        with self._guard:
            entry.users -= 1
        return entry.kb

    def _checkout(self, name: str) -> _Open:
        """The open entry of ``name`` (opened now if none), counted as used by one more caller."""
        with self._guard:
            entry = self._open.get(name)
            if entry is not None:
                entry.users += 1
                return entry
            opening = self._opening.setdefault(name, threading.Lock())
        with opening:  # the first callers of a name: one opens, the others wait for it
            with self._guard:
                entry = self._open.get(name)
                if entry is not None:
                    entry.users += 1
                    return entry
            kb = self._open_kb(name, self.settings_for(name))
            with self._guard:
                entry = self._open[name] = _Open(kb)
                entry.users += 1
                return entry

    def names(self) -> list[str]:
        """The knowledge bases open now."""
        with self._guard:
            return sorted(self._open)

    def close(self) -> None:
        """Close every open knowledge base (the embedded servers then stop after their idle timeout)."""
        with self._guard:
            entries = list(self._open.values())
            self._open = {}
        for entry in entries:
            try:
                entry.kb.close()
            except Exception:  # noqa: BLE001 - closing on shutdown: nothing left to tell
                pass


class _Open:
    """One open knowledge base of the pool and how many callers use it now."""

    __slots__ = ("kb", "users", "retired")

    def __init__(self, kb: KnowledgeBase):
        self.kb, self.users, self.retired = kb, 0, False
