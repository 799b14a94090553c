"""The GraphStore seam: the one way Python talks to the graph database.

Every statement is a named ``.cypher`` file (see ``kbgraph.cypher``); values go in as parameters only.
Backends implement ``_execute`` (one statement, optionally inside an open transaction) and the few
dialect-specific pieces; batching, schema creation, vector and full-text search, stats and deletion are
shared here so that both backends behave the same way.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kbgraph import cypher
from kbgraph.errors import SchemaMismatch, StoreError
from kbgraph.models import StoreStats

from kbgraph.store.params import Row, fulltext_terms, map_vectors
from kbgraph.store.scope import SCOPED, current_scope
from kbgraph.store.schema import (
    DOCUMENT_SCOPED_LABELS,
    INDEX_WAIT_SECONDS,
    SEED_LAYERS,
    schema_statements,
    snake,
    vector_schema_label,
)
from kbgraph.store.transaction import Transaction, delete_orphan_tags
from kbgraph.store.search import Searches
from kbgraph.store.vectors import VectorDimensions, index_dimensions

if TYPE_CHECKING:
    from kbgraph.settings import Settings

#: Re-exported: the names of the split-out modules (params, schema, transaction) that callers import from here.
__all__ = [
    "DOCUMENT_SCOPED_LABELS",
    "SEED_LAYERS",
    "GraphStore",
    "Row",
    "Transaction",
    "delete_orphan_tags",
    "fulltext_terms",
    "index_dimensions",
    "map_vectors",
    "schema_statements",
    "snake",
]


class GraphStore(Searches, VectorDimensions, ABC):
    """A graph database behind kbgraph.

    What a caller may need to know about a backend is asked of its class, before connecting
    (``kbgraph.store.store_class(settings)``), never decided by comparing backend names: ``backend`` (its name, for
    people: stats, logs, run records), ``dialect`` (the Cypher statement variants it reads, ``kbgraph.cypher``),
    ``database_per_kb``, ``kb_location(settings)``, ``browser_url(settings)``, ``exists(settings)``.
    location: where this store's knowledge base lives (``kb_location``). dimension: the embedding dimension of the
    vector indexes (validated on write); ``dimensions``: the labels whose index has another one (the static
    layers', setting ``static_dimension``), read with ``dimension_of``.
    batch_size: rows per UNWIND batch.
    Errors: StoreUnavailable (cannot connect), SchemaMismatch (existing index conflicts), StoreError (a
    statement failed; the message names the statement).

    Safe to share between threads: the store keeps a pool of at most ``serve_store_connections`` connections and
    each ``run`` or unit of work (``transaction``) borrows one for its duration only, the next one past the bound
    waiting for a free one; nothing is held between calls.
    Args:
        dimension: the embedding dimension of the vector indexes (floats per vector).
        batch_size: rows per UNWIND batch (``write_batches``).
        ef_construction: the HNSW efConstruction of new vector indexes (setting ``vector_ef_construction``).
        dimensions: label -> dimension of the labels whose index has another one (``static_dimension``)."""

    #: The backend's name, for people (stats, logs, run records, cache folder names); never compared by callers.
    backend: str = ""
    #: The backend's name as people write it in a sentence ('FalkorDB').
    display_name: str = ""
    #: The Cypher dialect whose statement variants this store reads: a key of ``kbgraph.cypher.DIALECTS``.
    dialect: str = ""
    #: True when each knowledge base is a database of its own on the server (Neo4j: knowledge base ``x`` of a server
    #: is its database ``x``); False when one server (or folder) holds many, one graph each, by name (FalkorDB).
    database_per_kb: bool = False
    #: True when independent read statements may run at once from several threads, each on a connection or
    #: session of its own from the store's pool (:func:`kbgraph.store.parallel.gather`); False runs them one after the other.
    parallel_reads: bool = False
    location: str = ""
    #: True when a unit of work is one database transaction that a failure rolls back as a whole (Neo4j);
    #: False when each statement commits on its own (FalkorDB) and a failed unit is undone by the
    #: compensations given to ``transaction``.
    rolls_back: bool = False

    @classmethod
    def exists(cls, settings: Settings) -> bool:
        """Whether the knowledge base of ``settings`` is already in this store, found without creating or writing
        anything (``kbgraph serve`` opens only existing knowledge bases for reads).
        Args:
            settings: the settings naming the knowledge base and the store.
        Returns:
            True when it exists. Default: True, for a store where connecting creates nothing (a Neo4j database must
            exist to be connected to)."""
        return True

    @classmethod
    @abstractmethod
    def connect(cls, settings: Settings) -> GraphStore:
        """Connect to the knowledge base of ``settings`` (``open_store``).
        Args:
            settings: the settings naming the knowledge base and the store (``settings.store``).
        Returns:
            The connected store (its schema not yet ensured: :meth:`ensure_schema`).
        Raises:
            StoreUnavailable: the store cannot be reached (unreachable, wrong password, server will not start).
            ConfigError: the settings cannot name one of this kind."""

    @classmethod
    @abstractmethod
    def kb_location(cls, settings: Settings) -> str:
        """Where the knowledge base of ``settings`` lives, printable and without connecting.
        Args:
            settings: the settings naming the knowledge base and the store.
        Returns:
            A data folder, or a URI and database: ``location`` of a connected store, and the key of what is kept
            about it outside the store (the BM25 indexes of kbgraph.query.bm25)."""

    @classmethod
    def prestart(cls, settings: Settings) -> threading.Thread | None:
        """Begin bringing up the store of an existing knowledge base in the background, without waiting and without
        creating anything, so that a process which will connect later finds it up sooner (the ``kbgraph`` console
        script calls it before importing its verbs, kbgraph.launch). Never raises; the later ``connect`` reports
        what went wrong. Default: nothing (a server the store does not start).
        Args:
            settings: the settings naming the knowledge base and the store.
        Returns:
            The thread doing it, which a process must join before it exits (a server's idle watchdog is started at
            its end), or None."""
        return None

    @classmethod
    def browser_url(cls, settings: Settings) -> str | None:
        """The Neo4j Browser address that opens the store of ``settings``.
        Args:
            settings: the settings naming the knowledge base and the store.
        Returns:
            The address (without query string), or None when Neo4j Browser cannot open this store (default)."""
        return None

    def __init__(
        self, *, dimension: int, batch_size: int, ef_construction: int, dimensions: Mapping[str, int] | None = None
    ):
        self.dimension = dimension
        self.ef_construction = ef_construction
        self.dimensions = {label: dim for label, dim in (dimensions or {}).items() if dim != dimension}
        self.batch_size = batch_size
        #: statement name -> times sent (auto-commit and in units of work): evidence for "no writes".
        self.sent: Counter[str] = Counter()

    # --- backend hooks ----------------------------------------------------------------------
    @abstractmethod
    def _execute(self, query: str, params: Row, tx: Any = None) -> list[Row]:
        """Run one statement text; inside ``tx`` when given. Returns rows as dicts."""

    @abstractmethod
    def _begin(self) -> Any:
        """Open a backend transaction handle."""

    @abstractmethod
    def _commit(self, handle: Any) -> None: ...

    @abstractmethod
    def _rollback(self, handle: Any) -> None: ...

    @abstractmethod
    def close(self) -> None:
        """Release connections (the embedded server keeps running for the next user)."""

    @abstractmethod
    def _vector_params(self, label: str, embedding: np.ndarray, k: int) -> Row: ...

    @abstractmethod
    def _vector_similarity(self, score: float) -> float:
        """Backend vector score -> cosine similarity in [-1, 1]."""

    @abstractmethod
    def _fulltext_query(self, terms: list[str]) -> str:
        """The engine's OR-query of ``terms`` (words only)."""

    @abstractmethod
    def _fulltext_params(self, label: str, prop: str, terms: list[str], k: int) -> Row: ...

    @abstractmethod
    def _list_vector_dimensions(self) -> dict[str, int]:
        """label -> dimension of its existing vector index on ``embedding``."""

    @abstractmethod
    def _create_schema_statement(self, name: str, params: Row) -> None:
        """Run one schema statement idempotently."""

    @abstractmethod
    def lease_key(self) -> str | None:
        """Where ``kbgraph ingest`` keeps its lock.
        Returns:
            The key of the ingest lease in this store's database (``(:IngestLease {kb: key})``, shared by every
            machine writing to it; kbgraph.ingest.lease), or None when the store's data lives in the knowledge
            base's folder and the folder's file lock serves (kbgraph.ingest.lock)."""

    # --- public API -------------------------------------------------------------------------
    def run(self, name: str, params: Row | None = None, *, predicate: str | None = None) -> list[Row]:
        """Run the named statement (auto-commit). A statement that declares ``$documents`` gets the caller's
        document scope as that parameter (kbgraph.store.scope; None outside a scope) unless ``params`` gives it.
        Args:
            name: the statement's name, a ``.cypher`` file of ``kbgraph.cypher`` (``"admin/count_labels"``).
            params: its parameters (the only way a value goes in).
            predicate: a filter's (kbgraph.filters.compile), put into the statement's ``{{predicate}}``
                (``cypher.compose``; its parameters in ``params``).
        Returns:
            Its rows as dicts, column name -> value.
        Raises:
            CypherNotFound: no statement of that name.
            StoreError: the database rejected the statement (the message names it); StoreTransient for a passing
                failure (a deadlock), StoreUnavailable when the connection is lost."""
        self.sent[name] += 1
        text = cypher.load(name, self.dialect) if predicate is None else cypher.compose(name, self.dialect, predicate)
        if SCOPED in text:  # the statement reads only the documents of the caller's scope (kbgraph.store.scope)
            scope = current_scope()
            params = {"documents": None if scope is None else scope.document_ids, **(params or {})}
        return self._execute(text, params or {})

    def run_pages(self, name: str, size: int) -> Iterator[Row]:
        """The rows of the named statement, read in pages, so a large knowledge base is never one reply.
        Args:
            name: a statement that takes ``$after`` (the last row's ``id``, '' at first) and ``$limit`` and
                returns rows in ``id`` order.
            size: rows per page.
        Yields:
            Each row, in ``id`` order.
        Raises:
            StoreError: as :meth:`run`."""
        after, rows = "", None
        while rows is None or len(rows) == size:
            rows = self.run(name, {"after": after, "limit": size})
            yield from rows
            after = rows[-1]["id"] if rows else after

    def run_apart(self, name: str, params: Row | None = None) -> list[Row]:
        """As ``run``, on a connection of its own: safe from another thread while the store's connection is
        busy (the ingest lease's renewal thread). Default: ``run`` (a store whose connection is thread-safe).
        Args:
            name: the statement's name, as :meth:`run`'s.
            params: its parameters.
        Returns:
            Its rows as dicts.
        Raises:
            StoreError: as :meth:`run`."""
        return self.run(name, params)

    def write_batches(self, name: str, rows: Sequence[Row], params: Row | None = None) -> int:
        """Run ``name`` once per batch of ``batch_size`` rows, each batch atomically.
        Args:
            name: an ``UNWIND $rows AS row ...`` statement.
            rows: the rows. Rows with an ``embedding`` must have the finite floats of the vector index of the
                label ``name`` writes (``VECTOR_WRITES``, ``dimension_of``).
            params: further parameters of every batch.
        Returns:
            The number of rows written.
        Raises:
            SchemaMismatch: an embedding of another size (a wrong-sized vector would silently go unindexed).
            StoreError: an embedding holds NaN or infinity; or as :meth:`run`."""
        total = 0
        for batch in self._batches(rows, name):
            self.run(name, {**(params or {}), "rows": batch})
            total += len(batch)
        return total

    @contextlib.contextmanager
    def transaction(self, on_rollback: Iterable[Callable[[], Any]] = ()) -> Iterator[Transaction]:
        """A unit of work: commit at the end of the block; if the block raises, undo it and re-raise.

        ``on_rollback``: compensations, callables that undo the unit's writes with statements of their own
        (e.g. delete the documents being written). The store decides whether they are needed: a store whose
        unit is a real transaction (``rolls_back``, Neo4j) rolls it back and skips them; FalkorDB, which runs
        each statement atomically but has no multi-statement transaction, runs them in order after the
        failure (each one's own error is swallowed: the block's exception is what the caller sees). So a
        caller always passes its compensations and never asks which backend it writes to (PIKE-RAG §5.1.2:
        a document's three layers are written as one unit).
        Args:
            on_rollback: the compensations, run in order when the block fails on a store that does not roll back.
        Yields:
            The ``Transaction``, whose ``run`` and ``write_batches`` are the store's inside the unit.
        Raises:
            StoreError: the unit fails (StoreTransient when Neo4j's commit fails for a passing reason); whatever
                the block raises is re-raised after the undo."""
        handle = self._begin()
        tx = Transaction(self, handle)
        try:
            yield tx
        except BaseException:
            with contextlib.suppress(Exception):
                self._rollback(handle)
            if not self.rolls_back:
                for undo in on_rollback:
                    with contextlib.suppress(Exception):
                        undo()
            raise
        else:
            self._commit(handle)

    def ensure_schema(self) -> None:
        """Create constraints, range, vector and full-text indexes idempotently; the ingest lease's and the claims'
        (``LEASE_SCHEMA``) only where the lease lives in the database (``lease_key()`` not None),
        then waits for them (:meth:`await_indexes`).
        Raises:
            SchemaMismatch: an existing vector index has another dimension than the configured one
                (``dimension_of``); the message names the setting that gives the dimension it was built with.
            StoreError: a schema statement fails, or an index failed or is not built in time (:meth:`await_indexes`)."""
        existing = self._list_vector_dimensions()
        wrong = {label: dim for label, dim in existing.items() if dim != self.dimension_of(label)}
        if wrong:
            label, dim = next(iter(wrong.items()))
            raise SchemaMismatch(
                f"the {label} vector index has dimension {dim} but the settings give {self.dimension_of(label)}; "
                f"use the embedding model the graph was built with (KBGRAPH_EMBEDDING_MODEL, "
                f"KBGRAPH_EMBEDDING_DIMENSION; for a layer of KBGRAPH_STATIC_LAYERS, KBGRAPH_STATIC_DIMENSION={dim}), "
                f"or re-create it with `kbgraph reset`"
            )
        # HNSW (FalkorDB; Neo4j's Lucene index keeps its M 16 / efConstruction 100): efConstruction 100 instead of
        # 200 cut FalkorDB's write time by a quarter for the same dense recall; 50 instead of 100 (setting
        # vector_ef_construction) halves the server's load time and holds the learned ranker's leave-one-set-out
        # recall (docs/benchmarks.md#hnsw-efconstruction-vector_ef_construction).
        params = {"dimension": self.dimension, "m": 16, "ef_construction": self.ef_construction, "ef_runtime": 100}
        for name in schema_statements(lease=self.lease_key() is not None):  # no lease, no lease schema
            indexed = vector_schema_label(name)  # a vector index: the dimension of its label
            self._create_schema_statement(
                name, {**params, "dimension": self.dimension_of(indexed)} if indexed else params
            )
        self.await_indexes()

    def await_indexes(self, timeout: float = INDEX_WAIT_SECONDS) -> None:
        """Return once every index of the graph serves queries (``schema/pending_indexes`` finds none): both
        stores build a new index in the background, and until it is built FalkorDB's full-text and vector
        procedures answer no rows at all, and Neo4j's refuse. One statement when nothing is pending, then one
        every 50 ms.
        Args:
            timeout: seconds to wait at most.
        Raises:
            StoreError: an index failed (Neo4j 'FAILED') or is still being built after ``timeout`` seconds (the
                message names the index and its progress)."""
        deadline = time.monotonic() + timeout
        while True:
            pending = self.run("schema/pending_indexes")
            if not pending:
                return
            failed = [r for r in pending if str(r["state"]).startswith("FAILED")]
            if failed or time.monotonic() >= deadline:
                what = "; ".join(f"{r['label']}: {r['state']}" for r in (failed or pending))
                raise StoreError(
                    f"index{'es' if len(failed or pending) > 1 else ''} of {self.location} "
                    f"{'failed' if failed else f'not built after {timeout:.0f} s'} ({what}); run the command "
                    f"again to wait longer, or re-create the knowledge base with `kbgraph reset`"
                )
            time.sleep(0.05)

    def stats(self) -> StoreStats:
        """Node count per label and relationship count per type.
        Returns:
            A ``StoreStats``: ``backend``, ``location``, ``nodes`` {label: count}, ``relationships`` {type: count}."""
        nodes = {r["label"]: int(r["count"]) for r in self.run("admin/count_labels")}
        rels = {r["type"]: int(r["count"]) for r in self.run("admin/count_relationships")}
        return StoreStats(
            backend=self.backend,
            location=self.location,
            nodes=dict(sorted(nodes.items())),
            relationships=dict(sorted(rels.items())),
        )

    def delete_document(
        self, document_id: str, tx: Transaction | None = None, entity_ids: Sequence[str] = ()
    ) -> dict[str, int]:
        """Remove a document's whole subgraph (sections, chunks, atomic questions, triples) and the entities
        no other document uses, and the corpus Tags no other chunk is TAGGED with (with the query Tags mapped only
        to them: ``delete_orphan_tags``). Idempotent.
        Args:
            document_id: the Document's id (``doc:…``).
            tx: the unit of work to delete in; None: a unit of work of its own.
            entity_ids: further entities to remove if nothing links them (those a failed write may have left).
        Returns:
            Counts of what was deleted: documents, sections, chunks, questions, triples, entities, tags.
        Raises:
            StoreError: as :meth:`run` (a unit of work of its own is undone)."""
        if tx is None:
            with self.transaction() as own:
                return self.delete_document(document_id, own, entity_ids)
        found = [r["id"] for r in tx.run("admin/document_entities", {"id": document_id})]
        entity_ids = list(dict.fromkeys([*found, *entity_ids]))
        tag_ids = [r["id"] for r in tx.run("tags/document_tags", {"id": document_id})]
        knowledge = tx.run("admin/delete_document_knowledge", {"id": document_id})[0]
        corpus = tx.run("admin/delete_document_corpus", {"id": document_id})[0]
        orphans = tx.run("admin/delete_orphan_entities", {"ids": entity_ids}) if entity_ids else []
        tags = delete_orphan_tags(tx, tag_ids)
        return {
            "documents": int(corpus["documents"]),
            "sections": int(corpus["sections"]),
            "chunks": int(corpus["chunks"]),
            "questions": int(knowledge["questions"]),
            "triples": int(knowledge["triples"]),
            "entities": int(orphans[0]["deleted"]) if orphans else 0,
            "tags": tags,
        }

    def orphans(self, limit: int = 100) -> list[Row]:
        """Nodes detached from the three layers (should be none).
        Args:
            limit: at most this many.
        Returns:
            Their rows (``admin/find_orphans``)."""
        return self.run("admin/find_orphans", {"limit": limit})

    def clear(self) -> None:
        """Delete every node and relationship. The indexes stay, but a vector index whose dimension is not the
        settings' (``dimension_of``: another embedding model or static dimension) is dropped, so that the next
        ``ensure_schema`` creates it anew (``KnowledgeBase.reset``; a reset is how a knowledge base is rebuilt at
        another dimension). FalkorDB deletes the graph instead (FalkorDBStore)."""
        self.run("admin/clear_graph")
        for label, dim in self._list_vector_dimensions().items():
            if dim != self.dimension_of(label):
                self.run(f"schema/drop_vector_{snake(label)}")

    def compact(self) -> None:
        """After a run of writes (an ingestion, a delete): let the store compact what it keeps on disk, in the
        background, so that its next start loads a snapshot instead of replaying every write. The embedded
        FalkorDB server rewrites its append-only file (``EmbeddedFalkorDB.compact``); other stores manage their
        own files (nothing to do). Never raises."""
        return None

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
