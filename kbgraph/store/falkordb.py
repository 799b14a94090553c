"""FalkorDB backend: the embedded server of ``falkor_server`` (default) or ``falkor://host:port``.

FalkorDB runs every query atomically but has no multi-statement transactions; a unit of work therefore
runs its statements one by one and relies on the compensations given to ``GraphStore.transaction``
(and on ingestion marking a document complete only at its end) to leave nothing half-written.

Safe to share between threads: the client holds a bounded ``redis.BlockingConnectionPool`` of
``serve_store_connections`` connections; every statement borrows one for its round trip and gives it back, so no
connection is held between calls (an ask holds none while it waits for its LLM), and a statement past the bound
waits for a free connection. A connection the server dropped is discarded by the pool and made anew.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from kbgraph.errors import KBGraphError, StoreError, StoreUnavailable
from kbgraph.models import NODE_LABELS
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore, index_dimensions
from kbgraph.store.falkor_server import EmbeddedFalkorDB
from kbgraph.store.parallel import quiesce
from kbgraph.store.params import Row, map_vectors
from kbgraph.store.schema import snake

_ALREADY = ("already indexed", "already exists", "already created", "constraint already")

log = logging.getLogger(__name__)


class FalkorDBStore(GraphStore):
    backend = "falkordb"
    display_name = "FalkorDB"
    dialect = "falkordb"
    database_per_kb = False  # one server (or data folder) holds many knowledge bases, one graph each
    parallel_reads = True  # every statement takes a connection of the client's pool for its round trip
    rolls_back = False  # no multi-statement transactions: a failed unit runs its compensations

    #: Files of an embedded FalkorDB folder that say a store was made there (its log, its append-only file).
    STORE_FILES = ("falkordb.log", "appendonlydir", "appendonly.aof")

    @classmethod
    def exists(cls, settings: Settings) -> bool:
        """The embedded store of a knowledge base exists when its own folder (``<home>/<name>``) holds a store's
        files: no server is started to find out. A FalkorDB server (``falkor://``) or a shared data folder
        (``data_dir``) holds many knowledge bases as graphs: connected, the graph must be listed there."""
        if not settings.store.uri and settings.store.data_dir is None:
            return cls._holds_store(settings)
        store = cls(settings)
        try:
            return settings.name in store._db.list_graphs()
        finally:
            store.close()

    @classmethod
    def prestart(cls, settings: Settings) -> threading.Thread | None:
        """As GraphStore.prestart: the embedded server of a knowledge base whose folder holds a store's files is
        started in a daemon thread (``EmbeddedFalkorDB.ensure_running``: loading the examples knowledge base takes
        2.4 s); the file lock makes a later ``connect`` wait for that start instead of starting another. Nothing
        for a ``falkor://`` server or a data folder that holds no store yet (an unknown knowledge base's folder is
        not created; a shared ``data_dir`` that holds other knowledge bases gets its server, as any read of it
        would start it)."""
        if settings.store.uri or not cls._holds_store(settings):
            return None
        server = cls._embedded(settings)

        def start() -> None:
            with contextlib.suppress(Exception):  # the later connect raises it, with its fix
                server.ensure_running()

        thread = threading.Thread(target=start, name="kbgraph-prestart", daemon=True)
        thread.start()
        return thread

    @classmethod
    def _holds_store(cls, settings: Settings) -> bool:
        """Does the embedded store's data folder (``settings.kb_dir``) hold a store's files (:data:`STORE_FILES`)?"""
        return any((settings.kb_dir / name).exists() for name in cls.STORE_FILES)

    @staticmethod
    def _embedded(settings: Settings) -> EmbeddedFalkorDB:
        """The embedded server of ``settings.kb_dir``, with the settings' idle and start timeouts (not started)."""
        return EmbeddedFalkorDB(
            settings.kb_dir,
            idle_timeout=settings.store.falkor_idle_timeout,
            start_timeout=settings.store.falkor_start_timeout,
        )

    @classmethod
    def connect(cls, settings: Settings) -> FalkorDBStore:
        return cls(settings)

    @classmethod
    def kb_location(cls, settings: Settings) -> str:
        """The ``falkor://`` URI of the server, or the embedded store's data folder (``settings.kb_dir``, resolved)."""
        return settings.store.uri or str(Path(settings.kb_dir).expanduser().resolve())

    def __init__(self, settings: Settings):
        super().__init__(
            dimension=settings.embedding.embedding_dimension,
            batch_size=settings.store.batch_size,
            dimensions=index_dimensions(settings),
            ef_construction=settings.store.vector_ef_construction,
        )
        import redis
        from falkordb import FalkorDB

        self.graph_name = settings.name
        self.server: EmbeddedFalkorDB | None = None
        self._reload_after_compaction = settings.store.falkor_reload_after_compaction
        #: rewrites of the embedded server's append-only file since it started that leave its indexes as a start
        #: builds them (:meth:`_reload`): none known at first, those of :meth:`_rewrite_aof` (a new graph's schema)
        self._rewrites = 0
        #: reloads begun (:meth:`_reload`), and set while none is under way: a statement that lost its connection
        #: to a reload waits for the server and is sent again
        self._reloads = 0
        self._serving = threading.Event()
        self._serving.set()
        # decode_responses as FalkorDB() sets it; timeout None: a statement waits for a connection (each is held for
        # one round trip only)
        # socket_timeout: how long one statement may take before the store counts the server as lost (redis-py's
        # default is 5 s: a write batch into a large graph's vector indexes on a busy machine takes longer, and the
        # 100,000-passage ingest of benchmarks/scale.py failed there); the same bound for the embedded and a remote server
        pooled = {
            "max_connections": settings.serve.serve_store_connections,
            "timeout": None,
            "decode_responses": True,
            "socket_timeout": settings.store.connect_timeout * 30,
        }
        self._pool: redis.BlockingConnectionPool | None = None
        try:
            if settings.store.uri:
                url = urlparse(settings.store.uri)
                self.location = self.kb_location(settings)
                self._pool = redis.BlockingConnectionPool(
                    host=url.hostname or "127.0.0.1",
                    port=url.port or 6379,
                    password=url.password or None,
                    username=url.username or None,
                    **pooled,
                )
                self._db = FalkorDB(connection_pool=self._pool)
                self._db.connection.ping()
            else:
                self.server = self._embedded(settings)
                self.location = self.kb_location(settings)  # the server's data_dir
                # connected under the folder's lock: a restart (a reload of another store, kbgraph serve's stop of
                # an evicted knowledge base) sees this store's connection, or is over before it is made
                with self.server.locked():
                    sock = self.server.ensure_running()
                    self._pool = redis.BlockingConnectionPool(
                        connection_class=redis.UnixDomainSocketConnection, path=str(sock), **pooled
                    )
                    self._db = FalkorDB(connection_pool=self._pool)
                    self._db.connection.ping()  # the pool keeps this connection open: a client of the server
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
            raise StoreUnavailable(
                f"cannot reach FalkorDB at {settings.store.uri or settings.kb_dir} ({exc}); "
                "check KBGRAPH_URI or run `kbgraph store status`"
            ) from exc
        except redis.exceptions.AuthenticationError as exc:
            raise StoreUnavailable(f"FalkorDB at {settings.store.uri} rejected the credentials in the URI") from exc
        self._graph = self._db.select_graph(self.graph_name)

    # --- execution ----------------------------------------------------------------------------
    def _execute(self, query: str, params: Row, tx: Any = None) -> list[Row]:
        import redis

        graph = self._graph
        reloads = self._reloads
        try:
            # the client's own command (Graph.query: the parameters header, the compact reply format), its reply
            # read here: scalars without the client's per-value dispatch (~2.5x less Python per value; a question
            # of score propagation reads ~3,000 values), anything else by the client's parser (_value)
            text = graph._build_params_header(map_vectors(params, _VectorLiteral)) + query
            reply = graph.execute_command("GRAPH.QUERY", graph.name, text, "--compact")
            if reply and isinstance(reply[-1], redis.exceptions.ResponseError):  # a run-time error
                raise reply[-1]
        except redis.exceptions.ResponseError as exc:
            raise StoreError(f"FalkorDB rejected a statement: {exc} [{_first_line(query)}]") from exc
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            if self.server is None or (self._serving.is_set() and self._reloads == reloads):
                raise StoreUnavailable(f"lost the connection to FalkorDB at {self.location}: {exc}") from exc
            self._serving.wait(self.server.start_timeout)  # the server this store started again (:meth:`_reload`)
            return self._execute(query, params, tx)
        if len(reply) < 3:  # statistics only: a statement without RETURN
            return []
        header = [h[1] if isinstance(h, (list, tuple)) else h for h in reply[0]]
        return [dict(zip(header, [_value(cell, graph) for cell in row], strict=False)) for row in reply[1]]

    def _begin(self) -> Any:
        return None

    def _commit(self, handle: Any) -> None:
        return None

    def _rollback(self, handle: Any) -> None:
        return None  # nothing to roll back: GraphStore.transaction runs the unit's compensations

    def compact(self) -> None:
        """The embedded server's append-only file rewritten when it has grown (``EmbeddedFalkorDB.compact``), and,
        with the setting ``falkor_reload_after_compaction`` (on by default), the server then started again if its
        file was rewritten (:meth:`_reload`); a ``falkor://`` server's persistence is its owner's (nothing done)."""
        if self.server is not None:
            started = self.server.compact()
            if self._reload_after_compaction:  # setting falkor_reload_after_compaction
                self._reload(started)

    def _reload(self, started: bool, timeout: float = 300.0) -> bool:
        """Start the embedded server again, so that it serves the indexes every later start of it builds, once its
        append-only file was rewritten (``started`` by :meth:`compact`, or since this store last looked, by Redis
        itself; a rewrite under way is waited for, ``timeout`` s at most); unless another client uses it: then its
        next start does it. The look for clients, the stop and the start are one hold of the data folder's lock
        (``EmbeddedFalkorDB.restart_unless_used``), under which every store connects and every start is made, so no
        other store's connection or start falls between them. Returns whether it was started again.

        Why (issue 56, one knowledge base, one answer): a rewrite stores the graph as a snapshot, and a server that
        loads a snapshot builds its vector indexes (HNSW: approximate) and full-text indexes anew from the nodes,
        while the running server built them node by node as the ingestion wrote them. The two agree but at the
        margins: other nearest neighbours near a layer's top ``seed_k`` (Entity above all: its static vectors of
        short names crowd together), other ties. On 2WikiMultihopQA (3,301 passages) 42 of 500 top 10s of score
        propagation, and 12 of dense retrieval, changed from the ingesting process to every process after the next
        start; none with this reload (tests/test_restart_determinism.py). A server that loaded its files and was not
        rewritten since is what a start builds: the statements it ran since are replayed at a start in their order.
        The reload costs one start, once per rewrite: loading the graph, 2.0 s for the sample documents (22,931
        nodes), 7.2 s for those 3,301 passages (81,478 nodes), on two shared cores (benchmarks/reload_cost.py)."""
        import redis

        assert self.server is not None and self._pool is not None
        conn = self._db.connection
        try:
            info = self._await_rewrite(timeout)
            if info is None or not (started or int(info.get("aof_rewrites", 0)) > self._rewrites):
                return False
        except (redis.exceptions.RedisError, OSError):
            return False
        self._pool.disconnect(inuse_connections=False)  # this store's idle connections do not use the server
        self._reloads += 1
        self._serving.clear()
        try:
            # the look for other clients, the stop and the start in one hold of the folder's lock: no store of this
            # or another process connects, and no server is started, in between
            if not self.server.restart_unless_used(settle=0.5):
                log.info(
                    "the FalkorDB server of %s is used by another client: its indexes are built anew when it "
                    "starts again",
                    self.location,
                )
                return False
            self._pool.disconnect()  # connections of the server that stopped
        except KBGraphError as exc:  # the next statement, or the next store of this knowledge base, says it again
            log.warning("the FalkorDB server of %s did not start again: %s", self.location, exc)
            return False
        finally:
            self._serving.set()
        with contextlib.suppress(redis.exceptions.RedisError, OSError):  # the next compaction looks again
            self._rewrites = int(conn.info("persistence").get("aof_rewrites", 0))
        return True

    def _await_rewrite(self, timeout: float) -> dict[str, Any] | None:
        """``INFO persistence`` once no rewrite of the append-only file runs or waits; None after ``timeout`` s."""
        conn = self._db.connection
        deadline = time.monotonic() + timeout
        while True:
            info: dict[str, Any] = conn.info("persistence")
            if not info.get("aof_rewrite_in_progress") and not info.get("aof_rewrite_scheduled"):
                return info
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    def close(self) -> None:
        quiesce(self)  # a background reader (the adjacency's build) ends first
        try:
            if self._pool is not None:
                self._pool.disconnect()
        except Exception:
            pass

    # --- dialect ------------------------------------------------------------------------------
    def _vector_params(self, label: str, embedding: np.ndarray, k: int) -> Row:
        return {"label": label, "k": k, "embedding": embedding}

    def _vector_similarity(self, score: float) -> float:
        return 1.0 - float(score)  # cosine distance -> cosine similarity

    def _fulltext_query(self, terms: list[str]) -> str:
        # RediSearch: '|' is OR; terms are \w+ only, so nothing else can act as syntax.
        return "|".join(terms)

    def _fulltext_params(self, label: str, prop: str, terms: list[str], k: int) -> Row:
        return {"label": label, "query": self._fulltext_query(terms), "k": k}

    def _list_vector_dimensions(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in self.run("schema/list_indexes"):
            options = row.get("options") or {}
            emb = options.get("embedding") if isinstance(options, dict) else None
            if isinstance(emb, dict) and "dimension" in emb:
                out[row["label"]] = int(emb["dimension"])
        return out

    def ensure_schema(self) -> None:
        """As GraphStore.ensure_schema. FalkorDB 4.16 does not populate a vector index whose creation it
        replays from the append-only file after a restart (measured: 0 hits), while an index stored in the
        file's RDB base works and indexes the nodes replayed after it. So when this call creates an index,
        the append-only file is rewritten at once (cheap: the graph is new) to put the index in the base."""
        self._created = False
        super().ensure_schema()
        if self._created:
            self._rewrite_aof()

    def _rewrite_aof(self, timeout: float = 60.0) -> None:
        """Rewrite the append-only file now and wait for it (``timeout`` s at most). Made when this store created
        indexes, on a new graph: it changes none of their answers, and does not count for :meth:`_reload`."""
        import redis

        try:
            self._db.connection.execute_command("BGREWRITEAOF")
        except redis.exceptions.ResponseError:
            pass  # a rewrite is already scheduled or running
        info = self._await_rewrite(timeout)
        if info is not None and self.server is not None:
            self._rewrites = int(info.get("aof_rewrites", 0))

    def _create_schema_statement(self, name: str, params: Row) -> None:
        try:
            self.run(name, params)
            self._created = True
        except StoreError as exc:
            if not any(s in str(exc).lower() for s in _ALREADY):
                raise
        if name.startswith("schema/id_"):
            label = next(lab for lab in NODE_LABELS if f"schema/id_{snake(lab)}" == name)
            self._unique_constraint(label)

    def clear(self) -> None:
        """As GraphStore.clear: every node and relationship deleted, the indexes and constraints in place.
        FalkorDB 4.16.3 breaks a label whose nodes an unlabelled delete-all statement (``admin/clear_graph``, as
        this store ran it before; Neo4j still does) emptied in some graphs: the next node of that label cannot be
        read ("Attempted to access undefined attribute"), and the server then crashes (measured after ingesting
        examples/docs/docx, 18k nodes; every later ingest of the knowledge base failed). So the graph itself is
        deleted (the client's ``Graph.delete``, the GRAPH.DELETE command) and its schema ensured anew."""
        import redis

        try:
            self._graph.delete()
        except redis.exceptions.ResponseError as exc:
            if "empty key" not in str(exc).lower():  # no graph yet: nothing to delete
                raise StoreError(f"FalkorDB could not delete graph {self.graph_name!r}: {exc}") from exc
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise StoreUnavailable(f"lost the connection to FalkorDB at {self.location}: {exc}") from exc
        self._graph = self._db.select_graph(self.graph_name)
        self.ensure_schema()

    def lease_key(self) -> None:
        """None: the ingest lock is the file lock in the knowledge base's folder, where the embedded server keeps
        its data (kbgraph.ingest.lock). A ``falkor://`` server written by several machines is not covered."""
        return None

    def _unique_constraint(self, label: str) -> None:
        import redis

        try:
            self._db.connection.execute_command(
                "GRAPH.CONSTRAINT", "CREATE", self.graph_name, "UNIQUE", "NODE", label, "PROPERTIES", 1, "id"
            )
        except redis.exceptions.ResponseError as exc:
            if not any(s in str(exc).lower() for s in _ALREADY):
                raise StoreError(f"cannot create the uniqueness constraint on {label}.id: {exc}") from exc


def _first_line(query: str) -> str:
    return query.strip().splitlines()[0][:120] if query.strip() else ""


_SCALARS = frozenset({str, int, float, bool})
#: Value types of FalkorDB's compact reply (falkordb.query_result.PARSE_SCALAR_TYPES' order).
_NULL, _STRING, _INTEGER, _DOUBLE, _ARRAY = 1, 2, 3, 5, 6


def _value(cell: list[Any], graph: Any) -> Any:
    """One value of a compact reply, [type, value], as the client's ``parse_scalar`` and then :func:`_plain` give
    it: null, strings (decoded by the connection), integers, doubles and arrays of them here; nodes, edges, maps,
    booleans, ... by the client."""
    kind, value = cell
    if kind == _STRING and type(value) is str:
        return value
    if kind == _DOUBLE:
        return float(value)
    if kind == _INTEGER:
        return int(value)
    if kind == _NULL:
        return None
    if kind == _ARRAY:
        return [_value(item, graph) for item in value]
    from falkordb.query_result import parse_scalar

    return _plain(parse_scalar(cell, graph))


def _plain(value: Any) -> Any:
    """FalkorDB Node/Edge objects -> property dicts; everything else unchanged."""
    if value is None or type(value) in _SCALARS:  # most values: one type check, no attribute lookup
        return value
    props = getattr(value, "properties", None)
    if isinstance(props, dict):
        return dict(props)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class _VectorLiteral:
    """A vector as Cypher list text. The FalkorDB client inlines parameters into the query text and writes
    any value it does not know with ``str()``; rendering the float32 array once with 7 significant digits
    (float32 precision) is ~10x faster than the client's per-element path and keeps the text short. One ``%``
    with a format per dimension renders in C: 1.4x faster than a per-float f-string (5,000 vectors of 384:
    0.31 s instead of 0.44 s), the same text; ingestion writes ~80k vectors per 3,300 passages in the thread
    that overlaps the embedder."""

    __slots__ = ("text",)
    _formats: dict[int, str] = {}

    def __init__(self, vector: np.ndarray):
        values = vector.tolist()
        fmt = self._formats.get(len(values))
        if fmt is None:
            fmt = self._formats[len(values)] = "[" + ",".join(["%.7g"] * len(values)) + "]"
        self.text = fmt % tuple(values)

    def __str__(self) -> str:
        return self.text
