"""Neo4j 5 backend through the official ``neo4j`` driver (bolt://, neo4j://, neo4j+s://, database
selectable). Units of work are real transactions.

Safe to share between threads: the driver is thread-safe and keeps the connection pool; a driver
session is not, so every statement run on its own (``run``) and every unit of work (``transaction``) has a session
of its own, taken from the pool for that call and given back at its end, never held between calls (an ask holds
none while it waits for its LLM). At most ``serve_store_connections`` sessions are open at once; one more waits
(without the driver's acquisition timeout) for one to end. A call made inside a unit of work by the thread that
holds it, and the ingest lease's renewal (``run_apart``), do not wait: the driver's pool keeps room for them.

Connecting is bounded by ``connect_timeout``: the driver's connection timeout (TCP connect) and its
connection-acquisition timeout (which bounds the Bolt handshake, routing and authentication of
``verify_connectivity``) are both ``connect_timeout``, so an endpoint that accepts the connection and never
answers fails after about ``connect_timeout`` seconds. The driver's own "Unable to retrieve routing
information" log record (logger ``neo4j.pool``, printed by Python's last-resort handler before kbgraph's
one-line error) is dropped: the StoreUnavailable raised says the same with the fix.
"""

from __future__ import annotations

import logging
import threading
from typing import Any
from urllib.parse import urlparse

import numpy as np

from kbgraph.errors import ConfigError, StoreError, StoreTransient, StoreUnavailable
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore, index_dimensions
from kbgraph.store.parallel import quiesce
from kbgraph.store.params import Row, map_vectors
from kbgraph.store.schema import snake
from kbgraph import cypher


#: Driver connections beyond ``serve_store_connections``: for ``run_apart`` and calls nested in a unit of work.
_ROOM = 2


class _DropRoutingNoise(logging.Filter):
    """Drops the driver's "Unable to retrieve routing information" record (its ServiceUnavailable is raised and
    reported by kbgraph as one line)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unable to retrieve routing information")


_POOL_LOG = logging.getLogger("neo4j.pool")
if not any(isinstance(f, _DropRoutingNoise) for f in _POOL_LOG.filters):
    _POOL_LOG.addFilter(_DropRoutingNoise())


def _no_answer(exc: BaseException) -> bool:
    """Did the connection attempt behind ``exc`` time out waiting for the server (accepted, never answered)?"""
    seen: list[BaseException] = [exc]
    while seen:
        e = seen.pop()
        text = str(e).lower()
        if "handshake" in text or "timed out" in text or "deadline" in text:
            return True
        seen += [x for x in (e.__cause__, e.__context__) if x is not None]
        seen += list(getattr(e, "exceptions", ()))
    return False


class Neo4jStore(GraphStore):
    backend = "neo4j"
    display_name = "Neo4j"
    dialect = "neo4j"
    database_per_kb = True  # knowledge base x of a server is its database x (kbgraph.serve.kbs)
    parallel_reads = True  # every statement outside a unit of work runs in a driver session of its own
    rolls_back = True  # a unit of work is one driver transaction

    @classmethod
    def connect(cls, settings: Settings) -> Neo4jStore:
        return cls(settings)

    @classmethod
    def kb_location(cls, settings: Settings) -> str:
        """The server's URI and the knowledge base's database."""
        return f"{settings.store.uri} (database {settings.store.neo4j_database})"

    @classmethod
    def browser_url(cls, settings: Settings) -> str:
        """The local Neo4j's own Browser for bolt://127.0.0.1 / localhost (port ``neo4j_http_port``),
        http://host:7474/browser/ for another host, https://browser.neo4j.io/ for encrypted URIs (Aura)."""
        parsed = urlparse(settings.store.uri or "")
        host = parsed.hostname or "127.0.0.1"
        if parsed.scheme.endswith(("+s", "+ssc")):
            return "https://browser.neo4j.io/"
        port = settings.store.neo4j_http_port if host in ("127.0.0.1", "localhost", "::1") else 7474
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/browser/"

    def __init__(self, settings: Settings):
        super().__init__(
            dimension=settings.embedding.embedding_dimension,
            batch_size=settings.store.batch_size,
            dimensions=index_dimensions(settings),
            ef_construction=settings.store.vector_ef_construction,
        )
        import neo4j
        from neo4j import exceptions as nx

        if settings.store.uri is None:  # (open_store picks this store for a bolt:// or neo4j:// uri only)
            raise ConfigError("a Neo4j store needs settings.store.uri (KBGRAPH_URI=bolt://host:7687 or neo4j://...)")
        self.location = self.kb_location(settings)
        self.database = settings.store.neo4j_database
        auth = (settings.store.neo4j_username, settings.store.neo4j_password.get_secret_value())
        try:
            self._driver = neo4j.GraphDatabase.driver(
                settings.store.uri,
                auth=auth,
                connection_timeout=settings.store.connect_timeout,
                # bounds the handshake, routing and authentication of verify_connectivity too: an endpoint that
                # accepts and never answers fails after connect_timeout (3x took 30.8 s with 10 s)
                connection_acquisition_timeout=settings.store.connect_timeout,
                # the server's notifications (e.g. "property key does not exist" on an empty graph) are
                # lint-level hints for people typing queries, not for a library's users
                notifications_min_severity="OFF",
                # sessions are bounded by self._slots; the room above it serves run_apart and nested calls
                max_connection_pool_size=settings.serve.serve_store_connections + _ROOM,
            )
            self._slots = threading.BoundedSemaphore(settings.serve.serve_store_connections)
            self._held = threading.local()  # .depth: sessions this thread holds
            self._driver.verify_connectivity()
            self.run_apart_text("RETURN 1")
        except nx.AuthError as exc:
            self._close_quietly()
            raise StoreUnavailable(
                f"Neo4j at {settings.store.uri} rejected user {settings.store.neo4j_username!r}: "
                "set NEO4J_USERNAME / NEO4J_PASSWORD to the right credentials"
            ) from exc
        except (nx.ServiceUnavailable, OSError) as exc:
            self._close_quietly()
            if _no_answer(exc):
                raise StoreUnavailable(
                    f"Neo4j at {settings.store.uri} accepted the connection but did not answer within "
                    f"{settings.store.connect_timeout:g} s: check that it is a Neo4j Bolt port (neo4j+s:// for TLS) and "
                    "the server is not overloaded, or raise KBGRAPH_CONNECT_TIMEOUT"
                ) from exc
            raise StoreUnavailable(
                f"cannot reach Neo4j at {settings.store.uri}: start it (`kbgraph neo4j start` for the local one) "
                "or fix KBGRAPH_URI / NEO4J_URI"
            ) from exc
        except nx.ClientError as exc:
            self._close_quietly()
            if "database" in str(exc.message or "").lower():
                raise ConfigError(
                    f"Neo4j at {settings.store.uri} has no database {self.database!r}: set NEO4J_DATABASE"
                ) from exc
            raise StoreUnavailable(f"Neo4j at {settings.store.uri}: {exc.message}") from exc
        except ValueError as exc:
            raise ConfigError(f"invalid Neo4j URI {settings.store.uri!r}: {exc}") from exc

    def _close_quietly(self) -> None:
        try:
            self._driver.close()
        except Exception:
            pass

    # --- sessions -----------------------------------------------------------------------------
    def _acquire(self) -> Any:
        """A session of its own for one call (module doc): waits for one of the ``serve_store_connections`` slots,
        unless this thread already holds one (a call inside its unit of work)."""
        depth = getattr(self._held, "depth", 0)
        if depth == 0:
            self._slots.acquire()
        self._held.depth = depth + 1
        try:
            return self._driver.session(database=self.database)
        except BaseException:
            self._release(None)
            raise

    def _release(self, session: Any) -> None:
        try:
            if session is not None:
                session.close()
        finally:
            self._held.depth -= 1
            if self._held.depth == 0:
                self._slots.release()

    def run_apart_text(self, query: str) -> list[Row]:
        """Run ``query`` (a statement text) in a session of its own outside the bound (connection checks)."""
        with self._driver.session(database=self.database) as session:
            return [record.data() for record in session.run(query)]

    # --- execution ----------------------------------------------------------------------------
    def _execute(self, query: str, params: Row, tx: Any = None) -> list[Row]:
        if tx is not None:
            return self._send(tx, query, params)
        session = self._acquire()
        try:
            return self._send(session, query, params)
        finally:
            self._release(session)

    def _send(self, runner: Any, query: str, params: Row) -> list[Row]:
        """Run one statement on ``runner`` (a session or a transaction) and read all its rows."""
        from neo4j import exceptions as nx

        try:
            result = runner.run(query, map_vectors(params, _Vector.of))
            keys = result.keys()
            return [_row(keys, record) for record in result]
        except nx.ServiceUnavailable as exc:
            raise StoreUnavailable(f"lost the connection to Neo4j at {self.location}") from exc
        except nx.TransientError as exc:  # e.g. DeadlockDetected: the caller may run its unit of work again
            first = query.strip().splitlines()[0][:120]
            raise StoreTransient(f"Neo4j: {exc.code}: {exc.message} [{first}]") from exc
        except nx.Neo4jError as exc:
            first = query.strip().splitlines()[0][:120]
            raise StoreError(f"Neo4j rejected a statement: {exc.message} [{first}]") from exc

    def run_apart(self, name: str, params: Row | None = None) -> list[Row]:
        """As ``run``, in a session of its own that does not wait for a slot (the ingest lease's renewal)."""
        self.sent[name] += 1
        with self._driver.session(database=self.database) as session:
            return self._send(session, cypher.load(name, self.dialect), params or {})

    def _begin(self) -> Any:
        session = self._acquire()
        try:
            return _Unit(session, session.begin_transaction())
        except BaseException:
            self._release(session)
            raise

    def _commit(self, handle: _Unit) -> None:
        from neo4j import exceptions as nx

        try:
            handle.tx.commit()
        except nx.TransientError as exc:
            raise StoreTransient(f"Neo4j: {exc.code}: {exc.message} [commit]") from exc
        finally:
            self._release(handle.session)

    def _rollback(self, handle: _Unit) -> None:
        try:
            handle.tx.rollback()
        finally:
            self._release(handle.session)

    def close(self) -> None:
        quiesce(self)  # a background reader (the adjacency's build) ends first: the driver's close cut it mid-reply
        self._driver.close()

    # --- dialect ------------------------------------------------------------------------------
    def _vector_params(self, label: str, embedding: np.ndarray, k: int) -> Row:
        return {"index": f"{snake(label)}_embedding", "k": k, "embedding": embedding}

    def _vector_similarity(self, score: float) -> float:
        return 2.0 * float(score) - 1.0  # Neo4j's cosine score is (1 + cos) / 2

    def _fulltext_params(self, label: str, prop: str, terms: list[str], k: int) -> Row:
        return {"index": f"{snake(label)}_{prop}", "query": self._fulltext_query(terms), "k": k}

    def _fulltext_query(self, terms: list[str]) -> str:
        # Lucene: whitespace-separated terms are OR-ed; terms are lower-cased \w+ so no operator survives.
        return " ".join(terms)

    def _list_vector_dimensions(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in self.run("schema/list_indexes"):
            if row.get("type") != "VECTOR" or row.get("properties") != ["embedding"]:
                continue
            config = (row.get("options") or {}).get("indexConfig") or {}
            if "vector.dimensions" in config:
                out[row["labels"][0]] = int(config["vector.dimensions"])
        return out

    def _create_schema_statement(self, name: str, params: Row) -> None:
        self.run(name, params)

    def lease_key(self) -> str:
        """The database's name: every machine whose runs write to this database shares its one ingest lease."""
        return self.database


class _Unit:
    """A unit of work: the driver transaction and the session it holds until commit or rollback."""

    __slots__ = ("session", "tx")

    def __init__(self, session: Any, tx: Any):
        self.session, self.tx = session, tx

    def run(self, query: str, params: Row) -> Any:
        return self.tx.run(query, params)


#: Value types a row carries as they are: a record of only these needs none of ``Record.data()``'s conversion.
_PLAIN = frozenset({str, int, float, bool, type(None)})


def _row(keys: list[str], record: Any) -> Row:
    """One record as a dict: a record of scalars directly (about 5x faster than ``Record.data()``, which walks every
    value for nodes, relationships and paths: 7 of 12 ms of client time for the 284 rows of a score propagation
    question's retrieve/layer_candidates on the sample documents); any other record by ``data()`` (nodes and
    relationships to property dicts)."""
    values = record.values()
    for value in values:
        if type(value) not in _PLAIN:
            return record.data()  # type: ignore[no-any-return]
    return dict(zip(keys, values, strict=True))


class _Vector(list[float]):
    """A vector as the driver's list of floats (packed exactly like a list), with a short ``repr``: the
    driver formats every RUN message's parameters with ``repr`` for its debug log even when that log is off
    (neo4j 6.4 ``Bolt5x5.run``), which took 4 s of 26 s writing 600 passages."""

    __slots__ = ()

    @classmethod
    def of(cls, vector: np.ndarray) -> _Vector:
        return cls(vector.tolist())

    def __repr__(self) -> str:
        return f"<vector of {len(self)} floats>"
