"""The public face: ``KnowledgeBase``, one knowledge base on one graph store."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from kbgraph.browse import get as browse_query
from kbgraph.browse import resolve_params
from kbgraph.embed import get_embedder
from kbgraph.embed.base import Embedder
from kbgraph.embed.cache import CachedEmbedder
from kbgraph.errors import ConfigError
from kbgraph.filters import Filter, parse_filter
from kbgraph.home import EMBED_CACHE
from kbgraph.eval import evaluate, load_dataset
from kbgraph.ingest.pipeline import Ingestor
from kbgraph.ingest.refresh import stored_metadata
from kbgraph.llm import get_llm
from kbgraph.llm.base import LLM
from kbgraph.models import MetadataValue, StoreStats
from kbgraph.query.ask import answer_question, clean_question, preload, retrieve
from kbgraph.query.bm25 import ENTITY_NAMES, shared_index
from kbgraph.query.context import QueryContext
from kbgraph.query.methods.registry import get_method
from kbgraph.query.propagation.rankers import get_ranker
from kbgraph.query.rationale import save_answer
from kbgraph.query.scope import resolve_scope
from kbgraph.query.streaming import stream_answer
from kbgraph.settings import Settings
from kbgraph.store import GraphStore, backend_name, open_store
from kbgraph.store.scope import DocumentScope, current_scope, intersect, within
from kbgraph.tagging import tag_classes

if TYPE_CHECKING:
    from kbgraph.ingest.report import IngestReport
    from kbgraph.eval import EvalSummary
    from kbgraph.query.models import Answer, ScoredChunk
    from kbgraph.query.rationale import SavedRationale
    from kbgraph.query.streaming import AnswerStream
    from kbgraph.tagging import TagClass


#: A filter as the API takes it: the model, its JSON (dict or text), or None for every document.
FilterInput = Filter | dict[str, Any] | str | None


class KnowledgeBase:
    """A knowledge base named ``name`` on the store the settings select (embedded FalkorDB by default), e.g.
    ``with KnowledgeBase("handbooks") as kb: kb.stats()``. The store is connected and its schema ensured on first
    use (:attr:`store`: StoreUnavailable if the store cannot be reached, SchemaMismatch if its vector indexes were
    built for another embedding dimension). Every method that reads or writes the store raises StoreError when the
    store fails a statement (StoreUnavailable when it cannot be reached); each method's Raises names the others.
    Args:
        name: the knowledge base's name (setting ``name``: one graph, one data folder); None: the settings'.
        settings: the settings (default ``Settings()``: the environment, kbgraph.toml, the defaults).
        **overrides: settings by flat name or group (``seed_k=5``, ``retrieval={...}``), over ``settings``.
    Raises:
        pydantic.ValidationError: a malformed setting (of ``overrides``, the environment or kbgraph.toml)."""

    def __init__(self, name: str | None = None, settings: Settings | None = None, **overrides: Any):
        if settings is None:
            settings = Settings(name=name, **overrides) if name else Settings(**overrides)
        elif name or overrides:
            settings = settings.updated({**({"name": name} if name else {}), **overrides})
        self.settings = settings
        self._store: GraphStore | None = None
        self._embedder: Embedder | None = None
        self._llm: LLM | None = None
        self._llm_known = False  # _llm is the configured (or assigned) LLM, None included
        self._lender: KnowledgeBase | None = None  # share(): the knowledge base whose store, embedder, LLM these are
        #: What the last ``ask(..., save=True)`` wrote (its Question id), or None.
        self.last_saved: SavedRationale | None = None

    @property
    def name(self) -> str:
        """The knowledge base's name (``settings.name``)."""
        return self.settings.name

    @property
    def store(self) -> GraphStore:
        """The connected GraphStore (schema ensured), opened on first use.
        Raises:
            StoreUnavailable: the store cannot be reached (or its server started).
            StoreError: an index failed or is not built in time (``GraphStore.await_indexes``).
            SchemaMismatch: its vector indexes were built for another embedding dimension.
            ConfigError: the settings name no store of a known kind (the URI's scheme)."""
        if self._store is None:
            store = open_store(self.settings)
            try:
                store.ensure_schema()
            except BaseException:
                store.close()
                raise
            self._store = store
        return self._store

    def ingest(
        self,
        paths: Sequence[str | Path] | str | Path,
        *,
        prune: bool = False,
        wait: bool = False,
        progress: bool | None = None,
        exclude: Sequence[str] = (),
        within: Sequence[str | Path] | None = None,
        meta: Mapping[str, MetadataValue] | None = None,
    ) -> IngestReport:
        """Ingest files, directories and .jsonl passage corpora (L0, PIKE-RAG §5.1: parse, chunk, distill, embed,
        write). Incremental: unchanged documents are skipped, changed ones replaced; an unchanged file is hashed, not
        parsed. Per-file failures are in the report, not raised. A re-ingest that changes only metadata updates it
        in place, nothing embedded (``report.metadata_updated``).
        Args:
            paths: files, folders and .jsonl passage corpora (one path or several).
            prune: delete the documents whose source vanished.
            wait: wait for another run's lock, logging whose it is, up to ``lock_timeout`` s.
            progress: None = bars when stdout and stderr are terminals, else log lines on ``kbgraph.ingest`` (a
                line per stage per group, at least every 30 s).
            exclude: gitignore-style patterns of files to leave out, besides the default rules (Office owner files,
                .DS_Store, Thumbs.db, ``*~``) and any ``.kbgraphignore``; each is reported as skipped with its rule.
            within: folders that fence the run (``kbgraph serve``'s serve_ingest_roots): a file or symbolic link
                that resolves outside all of them is reported as skipped, never read; None = no fence.
            meta: metadata keys given every document of the run (``kbgraph ingest --meta``; over a sidecar's and
                the file's own, issue 58, kbgraph.ingest.metadata).
        Returns:
            The run's ``IngestReport``: added, updated, unchanged, deleted, failed, skipped, errors, seconds.
        Raises:
            LockTimeout: another run holds this knowledge base (at once without ``wait``); its LeaseLost when a
                Neo4j run's lease is lost before a write.
            ValueError: a bad ``exclude`` pattern, or a bad or reserved ``meta`` key or a value that is no
                ``MetadataValue`` (before the run starts)."""
        if isinstance(paths, (str, Path)):
            paths = [paths]
        ingestor = Ingestor(self.store, self.settings, llm=self.llm, progress=progress, embedder=lambda: self.embedder)
        fence = [Path(w).expanduser().resolve() for w in within] if within is not None else None
        report = ingestor.run(paths, prune=prune, wait=wait, exclude=exclude, within=fence, meta=meta)
        if report.added or report.updated or report.deleted:
            self.store.compact()
            self._warm_bm25()
        return report

    def _warm_bm25(self) -> None:
        """Build (or load) the learned ranker's BM25 index of the new corpus now, and the entity names' index of
        the Entity.name seeds (setting ``entity_fulltext`` 'bm25'), so that the first question after an ingestion
        does not pay for them (kbgraph.query.bm25.shared_index; about 1 s per 3,500 chunks). A failure is logged,
        never raised: the first question builds them then."""
        r = self.settings.retrieval
        chunks = get_ranker(r.ranker).needs_pool and r.ranker_bm25_k > 0
        names = r.entity_fulltext == "bm25" and r.fulltext_k > 0 and r.weight_fulltext > 0
        if not (chunks or names):
            return

        try:
            if chunks:
                shared_index(self.store, self.settings)
            if names:
                shared_index(self.store, self.settings, corpus=ENTITY_NAMES)
        except Exception as exc:  # noqa: BLE001 - an index for later questions must not fail the ingestion
            logging.getLogger("kbgraph.ingest").warning(
                "BM25 index not built after ingestion (%s); the first question builds it", exc
            )

    @overload
    def ask(
        self,
        question: str,
        *,
        method: str | None = ...,
        k: int = ...,
        explain: bool = ...,
        save: bool = ...,
        stream: Literal[False] = ...,
        filters: FilterInput = ...,
    ) -> Answer: ...
    @overload
    def ask(
        self,
        question: str,
        *,
        method: str | None = ...,
        k: int = ...,
        explain: bool = ...,
        save: bool = ...,
        stream: Literal[True],
        filters: FilterInput = ...,
    ) -> AnswerStream: ...
    def ask(
        self,
        question: str,
        *,
        method: str | None = None,
        k: int = 5,
        explain: bool = False,
        save: bool = False,
        stream: bool = False,
        filters: FilterInput = None,
    ) -> Answer | AnswerStream:
        """Answer ``question`` from the graph with citations and rationale (PIKE-RAG §5.3, Algorithm 1). Only
        complete documents are retrieved and cited (not one still or left 'writing' by a killed run).
        Args:
            question: the question (surrounding white space removed; at most 4,000 characters).
            method: a name of ``kbgraph.query.methods.registry.METHODS``: 'auto' (default with an LLM: classifies the
                question, PIKE-RAG §3.2, and answers factual ones with 'l1', others with 'pike', §4.2; the Answer's
                ``question_class`` and ``route`` say which), 'pike', 'l1', 'naive', 'naive_hr', 'cot', 'self_ask',
                'self_ask_hr', 'migres', 'hirag', or retrieval only: 'propagation' (default without an LLM; also
                what an answer method falls back to without one), 'hierarchical', 'dense', 'bm25'.
            k: chunks cited by retrieval-only answers.
            explain: each chunk's score broken down by layer and node.
            save: write the rationale into the graph as (:Question)-[:USED]->(:Chunk),
                -[:PROPOSED]->(:SubQuestion)-[:MATCHED]->(:AtomicQuestion) (kbgraph.query.rationale; ``last_saved``
                holds its id; see it with ``browse('question')``).
            stream: return an iterator (``kbgraph.query.streaming.AnswerStream``, a context manager; ``close()``
                stops it) of ``kbgraph.query.models.AskEvent``: ``"delta"`` (the answer's next piece as the LLM writes
                it), ``"reset"``, ``"round"`` (an Algorithm 1 TraceRound as it finishes), and last ``"answer"`` (the
                Answer, as without ``stream``); a retrieval-only or cached answer comes as one delta. The question
                and method are checked at once (QueryError); other errors (LLMError, StoreError, ...) are raised by
                the iteration, computed in a worker thread: use the knowledge base for nothing else until the
                stream ends or is closed.
            filters: only the documents whose metadata the filter allows are read (issue 58; a
                ``kbgraph.filters.Filter``, its JSON as dict or text, or None for every document;
                ``kbgraph.filters.parse_where`` makes one from ``--where`` text): every method's seeds, hops and
                candidates are those documents' own, so the top ``k`` is theirs.
        Returns:
            The ``kbgraph.query.models.Answer`` (answer, rationale, citations, chunks, trace, usage); with
            ``stream``, the ``AnswerStream`` of its events.
        Raises:
            QueryError: an empty or over-long question (before connecting to the store), an unknown method, an
                invalid filter, an unknown filter key or a value of another type.
            LLMError: the LLM server fails (an unusable answer is an empty answer whose rationale says why)."""
        question = clean_question(question)  # a usage error is raised before the store is connected
        filt = None if filters is None else parse_filter(filters)
        if stream:
            with within(self.scope(filt)):  # the stream's worker thread keeps this context's scope
                return stream_answer(
                    question, self.query_context, method=method, k=k, explain=explain, then=self._save if save else None
                )
        self._open_beside(question)
        with within(self.scope(filt)):
            answer = answer_question(question, self.query_context(), method=method, k=k, explain=explain)
        if save:
            self._save(answer)
        return answer

    def scope(self, filters: FilterInput) -> DocumentScope | None:
        """The documents ``filters`` allows, with their chunks (``kbgraph.query.scope.resolve_scope``), within the
        calling context's scope if any (``kbgraph.store.scope.within``: a filter narrows it, never widens it).
        Args:
            filters: as :meth:`ask`'s; None for every document.
        Returns:
            The ``DocumentScope`` (document and chunk ids); None for no filter and no scope.
        Raises:
            QueryError: as :meth:`ask` (an invalid filter, an unknown key, a value of another type)."""
        own = None if filters is None else resolve_scope(self.store, parse_filter(filters))
        return intersect(current_scope(), own)

    def _save(self, answer: Answer) -> None:
        self.last_saved = save_answer(self.store, answer)

    def browse(self, query_name: str, /, **params: Any) -> list[dict[str, Any]]:
        """Run the ready Neo4j Browser query ``query_name`` on this store. Only complete documents and their chunks,
        triples and mentions appear ('orphans' alone lists documents left 'writing').
        Args:
            query_name: a query of ``kbgraph.browse.CATALOGUE``: 'document', 'entity', 'question', 'questions',
                'top_entities', 'changed', 'orphans'.
            **params: the query's parameters, over its defaults. ``filters`` (a keyword, no browse parameter): only
                what the documents it allows hold (issue 58; as :meth:`ask`), within the calling context's scope if
                any (``kbgraph.store.scope.within``: both must allow a document): a document of theirs, entities
                their chunks mention (with mentions and RELATED edges counted in them), saved questions whose
                every used chunk is theirs, orphans of theirs.
        Returns:
            Its rows; nodes come back as property dicts without ``embedding``.
        Raises:
            ConfigError: an unknown query or parameter, or a parameter value out of its bounds.
            QueryError: an invalid filter."""
        filters: FilterInput = params.pop("filters", None)
        query = browse_query(query_name)
        values = resolve_params(query, params)
        with within(self.scope(filters)):  # a filter narrows the caller's scope, never widens it
            rows = self.store.run(query.statement, values)
        return [_without_embeddings(row) for row in rows]

    def retrieve(
        self,
        question: str,
        *,
        k: int = 10,
        method: str = "propagation",
        explain: bool = False,
        filters: FilterInput = None,
    ) -> list[ScoredChunk]:
        """The top-``k`` chunks for ``question`` without answering (no LLM).
        Args:
            question: the question, as :meth:`ask`'s.
            k: the number of chunks.
            method: a retrieval method of ``kbgraph.query.methods.registry``: 'propagation', 'hierarchical', 'dense', 'bm25'.
            explain: each chunk's score terms (``ScoredChunk.breakdown``).
            filters: as :meth:`ask`'s.
        Returns:
            At most ``k`` ``kbgraph.query.models.ScoredChunk``, best first, chunks of complete documents only (a
            document still or left 'writing' by a killed ingestion is never returned).
        Raises:
            QueryError: an empty or over-long question, an unknown retrieval method or an invalid filter."""
        question = clean_question(question)  # before the store is connected
        row = get_method(method, "retrieval")
        filt = None if filters is None else parse_filter(filters)
        self._open_beside(question)
        with within(self.scope(filt)):
            return retrieve(question, self.query_context(llm=False), k=k, method=row, explain=explain)

    def _open_beside(self, question: str) -> None:
        """On the first question: the store opened in a thread of its own while this one loads what the question
        needs in Python (``kbgraph.query.ask.preload``: the embedder, the static model, bm25s). A stopped
        embedded server loads its data in its own process meanwhile (2.4 s for examples/docs), so the two
        waits overlap. Errors are raised as they would be one after the other: the store's first."""
        if self._store is not None or self._lender is not None:
            return
        with ThreadPoolExecutor(1, thread_name_prefix="kbgraph-open") as pool:
            opening = pool.submit(lambda: self.store)
            try:
                preload(question, self.settings, self.embedder)
            finally:
                opening.result()

    def query_context(self, *, llm: bool = True) -> QueryContext:
        """This knowledge base as the query methods take it (kbgraph.query.context).
        Args:
            llm: give the configured LLM (False: none, as for retrieval only).
        Returns:
            A ``QueryContext``: store (connected), settings, embedder, and the LLM (None when ``llm`` is False or
            none is configured)."""
        return QueryContext(self.store, self.settings, self.embedder, self.llm if llm else None)

    @property
    def embedder(self) -> Embedder:
        """The configured embedder (loaded on first use; importing torch takes seconds).
        Raises:
            ConfigError: the model's dimension is not ``embedding_dimension``, or the model or backend is unusable."""
        if self._embedder is None and self._lender is not None:
            self._embedder = self._lender.embedder
        if self._embedder is None:
            embedder = get_embedder(self.settings)
            if self.settings.embedding.embedding_cache:
                folder = self.settings.embedding.embedding_cache_dir or self.settings.home / EMBED_CACHE
                embedder = CachedEmbedder(embedder, folder / "embeddings.sqlite3")
            self._embedder = embedder
        return self._embedder

    @property
    def llm(self) -> LLM | None:
        """The configured LLM client, or None (offline: retrieval-only answers). Assignable: any object with
        the ``kbgraph.llm.LLM`` methods (e.g. ``kbgraph.llm.ScriptedLLM`` in tests), or None for offline."""
        if not self._llm_known:
            self._llm = self._lender.llm if self._lender is not None else get_llm(self.settings)
            self._llm_known = True
        return self._llm

    @llm.setter
    def llm(self, llm: LLM | None) -> None:
        self._llm, self._llm_known = llm, True

    def evaluate(self, dataset: str | Path, **options: Any) -> EvalSummary:
        """Evaluate the methods on a multi-hop QA data set against this knowledge base (its corpus is
        ingested first): EM/F1/precision/recall, LLM-judged accuracy, Recall@k and supporting-fact recall
        (PIKE-RAG §6.1; paper 003 §4), written to a resumable run folder with summary.json and report.md.
        Args:
            dataset: a data set folder or name (kbgraph.eval.load_dataset).
            **options: those of :func:`kbgraph.eval.evaluate` (methods, limit, sample, seed, out, ...).
        Returns:
            The ``EvalSummary`` (also the run folder's summary.json).
        Raises:
            ConfigError: no or several data sets found, an unknown method, a bad option, or a run folder of
                another configuration."""
        return evaluate(self, dataset, **options)

    def stats(self) -> StoreStats:
        """Node counts per label and relationship counts per type.
        Returns:
            A ``StoreStats``: backend, location, nodes {label: count}, relationships {type: count}."""
        return self.store.stats()

    def tag_classes(self) -> list[TagClass]:
        """The tag classes of auto-tagging (PIKE-RAG §5.2.2; ``kbgraph.tagging.tag_classes``).
        Returns:
            The ``TagClass`` list the LLM proposed at the first ingest with ``auto_tagging`` on; empty before."""
        return tag_classes(self.store)

    def documents(self, *, limit: int = 100, skip: int = 0) -> list[dict[str, Any]]:
        """The documents (PIKE-RAG §3.1 information-resource layer), by title.
        Args:
            limit: at most this many.
            skip: after skipping this many.
        Returns:
            Dicts with ``id``, ``title``, ``uri``, ``mime``, ``status`` ('complete', or 'writing' during or after an
            interrupted write), ``ingested_at`` (ISO 8601), ``chunks`` (count) and ``metadata`` ({key: value}: its
            metadata, issue 58, kbgraph.ingest.metadata; ``title`` is the title)."""
        rows = self.store.run("admin/list_documents", {"limit": int(limit), "skip": int(skip)})
        state = {r["id"]: r for r in self.store.run("ingest/document_state", {"ids": [r["id"] for r in rows]})}
        return [{**row, "metadata": stored_metadata(state.get(row["id"], {}))} for row in rows]

    def chunk(self, chunk_id: str) -> dict[str, Any] | None:
        """One chunk of a complete document with its provenance, as citations carry it.
        Args:
            chunk_id: the chunk's id.
        Returns:
            A dict of ``id``, ``text``, ``summary``, ``kind``, ``page`` (1-based or None), ``section_path``,
            ``document_id``, ``document_title``, ``document_uri``, ``section_id``; None when there is no such chunk."""
        rows = self.store.run("retrieve/chunk_details", {"ids": [chunk_id]})
        return rows[0] if rows else None

    def delete(self, document: str) -> dict[str, int]:
        """Remove one document's whole subgraph and the entities no other document uses.
        Args:
            document: its id (doc:…), its source URI, or a path to its source file.
        Returns:
            Counts of what was deleted by kind (``GraphStore.delete_document``); ``{"documents": 0}`` when no
            document matches (a failed unit of work is undone and its StoreError raised)."""
        key = document
        if not key.startswith(("doc:", "file:", "http:", "https:")) and Path(key).exists():
            key = Path(key).resolve().as_uri()
        rows = self.store.run("ingest/find_document", {"key": key})
        if not rows:
            return {"documents": 0}
        counts: dict[str, int] = {}
        for row in rows:
            for name, n in self.store.delete_document(row["id"]).items():
                counts[name] = counts.get(name, 0) + n
        self.store.compact()
        return counts

    def reset(self) -> None:
        """Delete every node and relationship of this knowledge base, and re-create the vector indexes whose
        dimension the settings changed (``GraphStore.clear``): the store is cleared before its schema is checked,
        so a knowledge base that ``store`` refuses (SchemaMismatch) can still be reset."""
        if self._store is not None:
            self._store.clear()
            return
        store = open_store(self.settings)
        try:
            store.clear()
            store.ensure_schema()
        except BaseException:
            store.close()
            raise
        self._store = store

    def close(self) -> None:
        """Close the store's connections (the embedded server keeps running); a shared one closes nothing."""
        if self._store is not None and self._lender is None:
            self._store.close()
        self._store, self._lender = None, None  # a shared one lets go of the lender's store, closing nothing

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def share(self) -> KnowledgeBase:
        """A knowledge base over this one's store, embedder and LLM, opened here first (for several threads at
        once: the stores and the embedder are thread-safe, each store call borrows a connection of the store's
        pool; kbgraph.serve.kbs hands one to each request), with state of its own: ``last_saved``, an ``llm``
        assigned to it. Closing it closes nothing shared.
        Returns:
            The new ``KnowledgeBase`` (this one's store is opened first: :attr:`store`'s errors)."""
        shared = KnowledgeBase(settings=self.settings)
        shared._store = self.store
        shared._lender = self
        return shared

    def __repr__(self) -> str:
        try:
            backend = backend_name(self.settings)
        except ConfigError:  # an unknown URI scheme: said when the store is opened, not by repr
            backend = "?"
        return f"KnowledgeBase(name={self.name!r}, backend={backend!r})"


def _without_embeddings(value: Any) -> Any:
    """Rows for people: drop the ``embedding`` (and ``pending_embedding``, a Document being written on FalkorDB)
    property of every node (hundreds of floats each)."""
    if isinstance(value, dict):
        return {k: _without_embeddings(v) for k, v in value.items() if k not in ("embedding", "pending_embedding")}
    if isinstance(value, (list, tuple)):
        return [_without_embeddings(v) for v in value]
    return value


def evaluate_dataset(
    dataset: str | Path, *, settings: Settings | None = None, kb_name: str | None = None, **options: Any
) -> EvalSummary:
    """:func:`kbgraph.eval.evaluate` on the knowledge base named after the data set (``kb_name`` overrides), with
    ``settings`` (default: the environment's). Builds the KB from the data set's corpus on first use and
    reuses it afterwards (incremental ingestion). ``options``: those of :func:`kbgraph.eval.evaluate`."""
    ds = load_dataset(dataset)
    settings = settings or Settings()
    with KnowledgeBase(settings=settings.updated({"name": kb_name or ds.name})) as kb:
        return evaluate(kb, ds, **options)
