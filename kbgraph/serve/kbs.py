"""Knowledge-base names and the per-process pool of open knowledge bases.

A name selects a knowledge base per request (``/v1/kb/{name}/...``, the MCP tools' ``kb``). It becomes a folder
under ``<home>`` on the embedded store and a database name on Neo4j, so :func:`check_name` refuses anything
that is not a plain name before any file or connection is made: empty, over 64 characters, a path (``/``,
``\\``, ``..``), NUL or other control characters, or a folder the home keeps for itself (kbgraph.home).

:class:`KBPool` keeps one :class:`~kbgraph.kb.KnowledgeBase` per name open for the life of the process and
shares it between the requests of that name: the store is safe to share between threads and holds a
pool of ``serve_store_connections`` connections (FalkorDB: a bounded ``BlockingConnectionPool``; Neo4j: a
driver session per statement or unit of work), each store call borrowing one for its round trip, so no connection
or lock is held across a request and an ask waiting for its LLM holds up no other; the embedder (an ONNX session,
thread-safe) is shared too, and ``kbgraph.embed`` shares it between knowledge bases of the same model; the LLM
requests are bounded per endpoint by ``llm_max_concurrency`` (kbgraph.llm.limit), not here. The embedded
FalkorDB server of a KB folder stays up while the pool's connections are open; its idle timer counts from when
the service closes them. Ingestion opens a store of its own (:meth:`KBPool.writing`) so that reads go on while a
job writes (PIKE-RAG §5.1: only complete documents are read); once the job ends its knowledge base is kept open
in the pool, as the one used last.

A read never makes a knowledge base, the served one (``settings.name``) included: :meth:`KBPool.use` opens an
existing one and raises KnowledgeBaseNotFound (404) otherwise, before any folder, server or connection is made;
only a write (an ingest job, :meth:`KBPool.fresh`, or ``use(name, create=True)``) makes one. At most ``serve_max_open_kbs`` are open at
once: the least recently used idle one is closed to open another (TooManyOpen, 503, when all are in use), and so
is its embedded server (in the default layout, a redis-server per knowledge-base folder), unless another client
still uses it (an ingestion job's store, another process): the bound holds for store servers too.

On Neo4j one knowledge base is one database: the configured knowledge base (``settings.name``) uses
``NEO4J_DATABASE``; any other name needs a database of that name on the server (Neo4j Enterprise; Community
hosts one database), else :class:`KnowledgeBaseNotHosted`.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from kbgraph.errors import ConfigError, KBGraphError, KnowledgeBaseNotFound, StoreError, StoreUnavailable
from kbgraph.home import check_not_reserved
from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings
from kbgraph.store import knowledge_base_exists, store_class
from kbgraph.store.falkor_server import EmbeddedFalkorDB

MAX_NAME = 64
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# Neo4j database names: ASCII letters, digits, dots and dashes, starting with a letter, 3-63 characters
_NEO4J_DB = re.compile(r"[a-z][a-z0-9.-]{2,62}")


class InvalidName(ConfigError):
    """A knowledge-base name that is not a plain name (HTTP 400)."""


class KnowledgeBaseNotHosted(KBGraphError):
    """The store cannot host this knowledge base (HTTP 404): a Neo4j server without a database for it."""


class TooManyOpen(KBGraphError):
    """Every one of ``serve_max_open_kbs`` open knowledge bases is in use (HTTP 503): try again shortly."""


def check_name(name: object) -> str:
    """``name`` if it is a plain knowledge-base name: 1-64 characters of letters, digits, ``_ . -``, starting
    with a letter or digit, without ``..``, and not a folder the home keeps for itself (``kbgraph.home.HOME_FOLDERS``:
    models, caches, BM25 indexes, local servers). Raises InvalidName (one line naming the rule) otherwise."""
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
    try:
        return check_not_reserved(name)
    except ConfigError as exc:
        raise InvalidName(str(exc)) from None


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
        if not store_class(s).database_per_kb or name == s.name:
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

    @contextmanager
    def writing(self, name: str) -> Iterator[KnowledgeBase]:
        """``with pool.writing(name) as kb:`` a :meth:`fresh` knowledge base for a write (an ingestion job), closed
        at the end and then kept open in the pool as the one used last (so that the reads that follow find its
        store up, and the pool's bound counts its server); when every open one is in use, its embedded server is
        stopped instead, unless another client uses it."""
        kb = self.fresh(name)
        server = _server_of(kb)
        try:
            yield kb
        finally:
            kb.close()
            try:
                with self.use(name):
                    pass
            except TooManyOpen:
                self._stop_server(name, server)
            except KBGraphError:  # the store is gone (the next read says why): nothing left to keep open
                pass

    def _stop_server(self, name: str, server: EmbeddedFalkorDB | None) -> None:
        """Stop ``server``, the embedded server of knowledge base ``name`` whose store the pool let go, in the
        background, unless ``name`` is open again by then or another client uses it
        (``EmbeddedFalkorDB.stop_unless_used``)."""
        if server is None:
            return

        def stop() -> None:
            with self._guard:
                opening = self._opening.setdefault(name, threading.Lock())
            with opening:  # not while the pool opens it again
                with self._guard:
                    if name in self._open:
                        return
                with contextlib.suppress(Exception):  # a server that cannot be stopped stops when idle
                    server.stop_unless_used()

        threading.Thread(target=stop, name=f"kbgraph-stop-{name}", daemon=True).start()

    def _open_kb(self, name: str, settings: Settings) -> KnowledgeBase:
        kb = KnowledgeBase(settings=settings)
        try:
            kb.store  # noqa: B018 - connect now: a missing Neo4j database is found here
        except (ConfigError, StoreError) as exc:
            kb.close()
            missing = any(w in str(exc).lower() for w in ("no database", "not found"))
            if store_class(settings).database_per_kb and name != self.settings.name and missing:
                raise KnowledgeBaseNotHosted(self._not_hosted(name, f"the server has none ({exc})")) from exc
            raise
        except BaseException:
            kb.close()
            raise
        return kb

    @contextmanager
    def use(self, name: str, *, create: bool = False) -> Iterator[KnowledgeBase]:
        """``with pool.use(name) as kb:`` knowledge base ``name`` for one library call (a request), any number of
        callers at once. The store is opened on first need and shared (``KnowledgeBase.share``): each store call
        borrows one of its ``serve_store_connections`` connections and gives it back, so nothing is held across
        the call and an answer that waits for its LLM holds up no other; the ``kb`` itself (``last_saved``, an
        ``llm`` assigned to it) is this caller's. A lost connection (StoreUnavailable) retires the shared store:
        the next caller opens a new one (starting the embedded server again if it stopped), the old one is closed
        when its last caller leaves.

        Only an existing knowledge base is opened (the served one too), unless ``create`` (a write):
        KnowledgeBaseNotFound (404) otherwise, with nothing made on disk and no server started. At most
        ``serve_max_open_kbs`` are open: opening one more closes the least recently used idle one, TooManyOpen
        (503) when all are in use."""
        check_name(name)
        entry = self._checkout(name, create)
        try:
            yield entry.kb.share()
        except StoreUnavailable:
            with self._guard:
                entry.retired = True
                if self._open.get(name) is entry:
                    del self._open[name]
            raise
        finally:
            self._release(entry)

    def _release(self, entry: _Open) -> None:
        with self._guard:
            entry.users -= 1
            entry.used = time.monotonic()
            last = entry.retired and entry.users == 0
        if last:
            entry.kb.close()

    def shared(self, name: str, *, create: bool = False) -> KnowledgeBase:
        """The open knowledge base ``name`` (opened now if none; ``create`` as for :meth:`use`) whose store,
        embedder and LLM every request's ``kb`` shares: an LLM assigned to it serves the requests that follow
        (e.g. a scripted LLM in tests)."""
        entry = self._checkout(check_name(name), create)
        with self._guard:
            entry.users -= 1
        return entry.kb

    def exists(self, name: str) -> bool:
        """True when knowledge base ``name`` is open or exists in the store (found without creating anything:
        kbgraph.store.knowledge_base_exists). The served one is no exception: ``kbgraph --kb ghost serve`` serves
        a knowledge base that its first ingest makes."""
        return self._exists(name, self.settings_for(name))

    def _exists(self, name: str, settings: Settings) -> bool:
        """:meth:`exists` for ``name`` whose settings are ``settings`` (already made by the caller)."""
        with self._guard:
            if name in self._open:
                return True
        return knowledge_base_exists(settings)

    def _checkout(self, name: str, create: bool) -> _Open:
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
            settings = self.settings_for(name)
            if not create and not self._exists(name, settings):
                raise KnowledgeBaseNotFound(
                    f"no knowledge base {name!r} on this server: ingest into it first (POST /v1/kb/{name}/ingest "
                    "with a key that may write it), or see the open ones at /readyz"
                )
            self._make_room(name)
            kb = self._open_kb(name, settings)
            with self._guard:
                entry = self._open[name] = _Open(kb)
                entry.users += 1
                return entry

    def _make_room(self, name: str) -> None:
        """Close the least recently used idle knowledge bases, and stop their embedded servers
        (:meth:`_stop_server`), until one more fits ``serve_max_open_kbs``; raises TooManyOpen when every open one
        is in use."""
        bound = self.settings.serve.serve_max_open_kbs
        closing: list[tuple[str, _Open]] = []
        with self._guard:
            while len(self._open) >= bound:
                idle = [(e.used, n) for n, e in self._open.items() if e.users == 0]
                if not idle:
                    raise TooManyOpen(
                        f"cannot open knowledge base {name!r}: all {bound} open knowledge bases are in use "
                        "(serve_max_open_kbs); try again shortly, or raise KBGRAPH_SERVE_MAX_OPEN_KBS"
                    )
                _, oldest = min(idle)
                closing.append((oldest, self._open.pop(oldest)))
        for evicted, entry in closing:
            server = _server_of(entry.kb)
            try:
                entry.kb.close()
            except Exception:  # noqa: BLE001 - an idle store that fails to close is gone from the pool anyway
                pass
            self._stop_server(evicted, server)

    def names(self) -> list[str]:
        """The knowledge bases open now."""
        with self._guard:
            return sorted(self._open)

    def close(self) -> None:
        """Close every open knowledge base (at shutdown: the embedded servers then stop after their idle timeout, so
        that a restarted service finds them up)."""
        with self._guard:
            entries = list(self._open.values())
            self._open = {}
        for entry in entries:
            try:
                entry.kb.close()
            except Exception:  # noqa: BLE001 - closing on shutdown: nothing left to tell
                pass


def _server_of(kb: KnowledgeBase) -> EmbeddedFalkorDB | None:
    """The embedded server of an open knowledge base when it serves that knowledge base alone (the default layout,
    ``<home>/<name>``); None for a ``falkor://`` server, a shared ``data_dir`` or another store."""
    store = kb.settings.store
    if store.uri or store.data_dir is not None:
        return None
    server = getattr(kb.store, "server", None)
    return server if isinstance(server, EmbeddedFalkorDB) else None


class _Open:
    """One open knowledge base of the pool and how many callers use it now."""

    __slots__ = ("kb", "users", "retired", "used")

    def __init__(self, kb: KnowledgeBase):
        self.kb, self.users, self.retired, self.used = kb, 0, False, time.monotonic()
