"""BM25 baseline over the knowledge base's chunks (Robertson & Zaragoza 2009), with ``bm25s``.

The evaluation reports every graph figure beside a lexical baseline (PIKE-RAG §6.1 compares against flat
retrieval; BM25 is the standard sparse one): method 'bm25' of the registry (kbgraph.query.methods.registry,
``retrieve_bm25``). The corpus is the KB's own chunks, read from the store with
``cypher/retrieve/chunk_texts.cypher``, each indexed as the same text the embedder sees for the dense
baseline (``kbgraph.text.index_text``: ``document title [> section path]``, a table's summary, then the
chunk text). Tokens: ``bm25s``'s
tokenizer (lower case, words of two or more characters, English stop words removed) with the Snowball
English stemmer when PyStemmer is installed. Scoring: bm25s "lucene" variant, k1 = 1.5, b = 0.75.

The index is cached on disk per knowledge base under ``<home>/bm25/<backend>-<name>-<hash>/<fingerprint>/``.
The fingerprint is a SHA-256 over every (chunk id, document sha256) pair (``cypher/retrieve/chunk_keys``):
chunk ids derive from document, position and text, so any ingestion, update or deletion changes it and the
next ``BM25Index.open`` rebuilds. Builds go to a temporary folder renamed into place, so concurrent
processes never read a half-written index.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import json
import logging
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, NamedTuple

from kbgraph.home import BM25
from kbgraph.query.context import QueryContext
from kbgraph.query.graph import chunk_details, scored_chunk
from kbgraph.query.models import ScoredChunk
from kbgraph.settings import Settings
from kbgraph.store import GraphStore, store_class
from kbgraph.store.scope import current_scope
from kbgraph.text import index_text

log = logging.getLogger(__name__)

#: Rows per page when reading chunk keys and texts from the store.
PAGE = 5000
K1, B, METHOD = 1.5, 0.75, "lucene"
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _stemmer() -> tuple[Callable[[list[str]], list[str]] | None, str]:
    """(stem function or None, its name for the fingerprint)."""
    try:
        import Stemmer  # PyStemmer
    except ImportError:
        return None, "none"
    return Stemmer.Stemmer("english").stemWords, "snowball-english"


_IMPORT_LOCK = threading.Lock()


class _NoNumbaForBM25s(importlib.abc.MetaPathFinder):
    """Refuses ``numba`` to an import that comes from bm25s (its own frames on the importing thread's stack), so
    bm25s takes its numpy backend: importing numba cost a question's first search ~0.25 s of a ~2 s ``kbgraph
    ask`` (benchmarks/HISTORY.md, "Cold start"), and a single query over one knowledge base's chunks does not need its
    compiled scoring (the scores are the same). Any other importer, on any thread, gets numba as usual."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname == "numba" or fullname.startswith("numba."):
            frame: FrameType | None = sys._getframe(1)
            while frame is not None:
                if str(frame.f_globals.get("__name__", "")).split(".")[0] == "bm25s":
                    raise ModuleNotFoundError("numba is not used by kbgraph's BM25", name=fullname)
                frame = frame.f_back
        return None


def load_library() -> Any:
    """The bm25s module, imported now if it was not (~0.15 s, with its numpy backend: :class:`_NoNumbaForBM25s`).
    Raises ImportError with an install hint when bm25s is missing."""
    with _IMPORT_LOCK:  # one thread imports it; the others wait for the whole module
        if "bm25s" in sys.modules:
            return sys.modules["bm25s"]
        finder = _NoNumbaForBM25s()
        sys.meta_path.insert(0, finder)
        try:
            import bm25s
        except ImportError as exc:  # pragma: no cover - bm25s is a dependency of kbgraph
            raise ImportError("method 'bm25' needs bm25s: pip install bm25s PyStemmer") from exc
        finally:
            sys.meta_path.remove(finder)
        return bm25s


def row_text(row: dict[str, Any]) -> str:
    """The text of a ``chunk_texts`` row as indexed: ``kbgraph.text.index_text``, the dense baseline's
    embedding text (kbgraph.ingest.pipeline)."""
    return index_text(
        row.get("document_title"), row.get("section_path"), row.get("kind"), row.get("text"), row.get("summary")
    )


def _name(row: dict[str, Any]) -> str:
    return str(row.get("name") or "")


class Corpus(NamedTuple):
    """What a BM25 index is over: ``keys`` and ``texts`` name paged statements (``$after``, ``$limit``, rows in
    ``id`` order); ``key(row)`` is what the fingerprint reads of a ``keys`` row beside its id, ``text(row)`` what is
    indexed of a ``texts`` row; ``suffix`` ends the index's folder name (:func:`index_root`); ``keep_texts``: the
    index keeps each text (:attr:`BM25Index.texts`) for the hits to show."""

    suffix: str
    keys: str
    texts: str
    key: Callable[[dict[str, Any]], str]
    text: Callable[[dict[str, Any]], str]
    keep_texts: bool = False


#: The chunks (method 'bm25', the learned rankers' BM25 features, the Chunk full-text seeds): each chunk as the
#: dense baseline embeds it, its fingerprint over (chunk id, its document's sha256).
CHUNKS = Corpus("", "retrieve/chunk_keys", "retrieve/chunk_texts", lambda row: str(row.get("sha256") or ""), row_text)
#: The entities' names (score propagation's Entity.name full-text seeds, setting ``entity_fulltext`` 'bm25'):
#: ``retrieve/entity_names`` for both, its fingerprint over (entity id, name).
ENTITY_NAMES = Corpus("-entity_name", "retrieve/entity_names", "retrieve/entity_names", _name, _name, keep_texts=True)


def index_root(settings: Settings, corpus: Corpus = CHUNKS) -> Path:
    """The folder of this knowledge base's BM25 indexes of ``corpus`` (one subfolder per corpus fingerprint)."""
    store = store_class(settings)
    tag = hashlib.sha256(store.kb_location(settings).encode()).hexdigest()[:8]
    return settings.home / BM25 / f"{store.backend}-{_SAFE.sub('_', settings.name)}-{tag}{corpus.suffix}"


def corpus_fingerprint(store: GraphStore, salt: str = "", corpus: Corpus = CHUNKS) -> tuple[str, int]:
    """(hex SHA-256 of every row id of ``corpus.keys`` and its key (a chunk's document's sha256, an entity's name),
    number of rows)."""
    h = hashlib.sha256(salt.encode())
    n = 0
    for row in store.run_pages(corpus.keys, PAGE):
        h.update(f"{row['id']}\t{corpus.key(row)}\n".encode())
        n += 1
    return h.hexdigest(), n


def _fingerprint_of(folder: Path) -> str | None:
    try:
        fingerprint: str | None = json.loads((folder / "kbgraph.json").read_text()).get("fingerprint")
        return fingerprint
    except (OSError, ValueError):
        return None


def corpus_generation(store: GraphStore) -> list[Any]:
    """[number of Document nodes, number of ingestion runs, latest ingestion run id, its finish time, its status]
    (``cypher/retrieve/corpus_generation``): one light statement whose value changes with every ingestion run
    and deletion, so a cached index is re-checked only then."""
    rows = store.run("retrieve/corpus_generation")
    row = rows[0] if rows else {}
    return [row.get("documents") or 0, row.get("runs") or 0, row.get("run"), row.get("finished_at"), row.get("status")]


def build_retriever(texts: list[str], *, k1: float = K1, b: float = B) -> Any:
    """A bm25s retriever over ``texts`` (one document each), tokenised as the chunk index is (bm25s's tokenizer,
    English stop words, the Snowball stemmer when PyStemmer is installed), or None for no texts: what
    :meth:`BM25Index.open` builds, and the document cards' index (kbgraph.query.propagation.cards)."""
    if not texts:
        return None
    bm25s = load_library()
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=_stemmer()[0], return_ids=False, show_progress=False)
    retriever = bm25s.BM25(k1=k1, b=b, method=METHOD)
    retriever.index(tokens, show_progress=False)
    return retriever


class BM25Index:
    """A bm25s index over the chunks of one knowledge base (or another :class:`Corpus`). Open it with :meth:`open`;
    ``ids[i]`` is the chunk id of document i of the index, ``texts[i]`` its text when the corpus keeps them."""

    def __init__(
        self,
        retriever: Any,
        ids: list[str],
        *,
        fingerprint: str,
        folder: Path | None,
        stemmer: str,
        built: bool,
        texts: list[str] | None = None,
    ) -> None:
        self.retriever = retriever
        self.ids = ids
        self.texts = texts
        self._text_of = dict(zip(ids, texts, strict=True)) if texts is not None else {}
        self.fingerprint = fingerprint
        self.folder = folder
        self.stemmer = stemmer
        self.built = built  # True when this open built the index (cache miss)
        self._stem = _stemmer()[0] if stemmer != "none" else None
        self._masks: dict[frozenset[str], Any] = {}  # document scopes' weight masks (:meth:`search`)
        self._masks_lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def open(
        cls,
        store: GraphStore,
        settings: Settings,
        *,
        root: Path | None = None,
        rebuild: bool = False,
        generation: list[Any] | None = None,
        k1: float = K1,
        b: float = B,
        corpus: Corpus = CHUNKS,
    ) -> BM25Index:
        """The index of the KB's current chunks (or of ``corpus``, e.g. :data:`ENTITY_NAMES`): loaded from disk
        when the corpus fingerprint matches, else built from the store and saved. ``root`` overrides
        :func:`index_root`. ``generation``
        (:func:`corpus_generation`): an index saved under the same generation is loaded without computing the
        fingerprint (one pass over every chunk key), and a saved index records it. Raises ImportError with
        an install hint when bm25s is missing. ``k1``, ``b``: BM25's parameters (MIGRES, paper 002 §4.1: 0.9 and
        0.4); other values than K1, B are kept under ``<root>-k1_<k1>-b_<b>``."""
        bm25s = load_library()
        stem_name = _stemmer()[1]
        salt = f"bm25s {bm25s.__version__} {METHOD} k1={k1} b={b} stemmer={stem_name} stopwords=en\n"
        root = Path(root) if root is not None else index_root(settings, corpus)
        if (k1, b) != (K1, B):
            root = root.with_name(f"{root.name}-k1_{k1:g}-b_{b:g}")
        if generation is not None and not rebuild:
            known = _load_generation(root, generation, salt)
            if known is not None:
                return cls(
                    known[0],
                    known[1],
                    fingerprint=known[2],
                    folder=known[3],
                    stemmer=stem_name,
                    built=False,
                    texts=known[4],
                )
        fingerprint, n = corpus_fingerprint(store, salt, corpus)
        folder = root / fingerprint[:16]
        if rebuild:
            shutil.rmtree(folder, ignore_errors=True)
        elif (folder / "kbgraph.json").is_file():
            try:
                meta = json.loads((folder / "kbgraph.json").read_text())
                if meta.get("fingerprint") == fingerprint:
                    if generation is not None and meta.get("generation") != generation:
                        meta["generation"] = generation
                        meta["salt"] = salt
                        _write_meta(folder, meta)
                    return cls(
                        _load_retriever(folder, meta),
                        meta["ids"],
                        fingerprint=fingerprint,
                        folder=folder,
                        stemmer=stem_name,
                        built=False,
                        texts=meta.get("texts"),
                    )
            except (OSError, ValueError, KeyError) as exc:
                log.warning("BM25 index at %s unreadable (%s); rebuilding", folder, exc)
        t0 = time.perf_counter()
        ids, texts = [], []
        for row in store.run_pages(corpus.texts, PAGE):
            ids.append(row["id"])
            texts.append(corpus.text(row))
        retriever = build_retriever(texts, k1=k1, b=b)
        log.info("BM25 index of %d %s built in %.1f s", len(ids), corpus.texts, time.perf_counter() - t0)
        kept = texts if corpus.keep_texts else None
        index = cls(retriever, ids, fingerprint=fingerprint, folder=folder, stemmer=stem_name, built=True, texts=kept)
        index._save(
            root,
            folder,
            n,
            {"k1": k1, "b": b, **({"generation": generation, "salt": salt} if generation is not None else {})},
        )
        return index

    def _save(self, root: Path, folder: Path, n: int, extra: dict[str, Any]) -> None:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
        try:
            if self.retriever is not None:
                self.retriever.save(str(tmp), show_progress=False)
            meta = {
                "fingerprint": self.fingerprint,
                "chunks": n,
                "ids": self.ids,
                **({"texts": self.texts} if self.texts is not None else {}),
                "stemmer": self.stemmer,
                "method": METHOD,
                "built_at": time.time(),
                **extra,
            }
            (tmp / "kbgraph.json").write_text(json.dumps(meta))
            if folder.exists() and _fingerprint_of(folder) != self.fingerprint:
                shutil.rmtree(folder, ignore_errors=True)  # unreadable or half-deleted
            try:
                tmp.rename(folder)
            except OSError:  # another process saved the same fingerprint first: keep theirs
                shutil.rmtree(tmp, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        for old in root.iterdir():  # indexes of earlier corpus states
            if old.is_dir() and old != folder and not old.name.startswith(".build-"):
                shutil.rmtree(old, ignore_errors=True)

    def search(self, question: str, k: int, *, within: frozenset[str] | None = None) -> list[tuple[str, float]]:
        """Top-``k`` (chunk id, BM25 score) pairs, best first; chunks sharing no query term are left out.
        ``within``: only these chunk ids are scored (a document scope's chunks, kbgraph.store.scope: bm25s's
        ``weight_mask``, so the top ``k`` is the scope's own, with the whole corpus's term statistics)."""
        bm25s = load_library()
        if self.retriever is None or k < 1 or (within is not None and not within):
            return []
        query = bm25s.tokenize([question], stopwords="en", stemmer=self._stem, return_ids=False, show_progress=False)
        if not query[0]:
            return []
        mask = None if within is None else self._mask(within)
        docs, scores = self.retriever.retrieve(query, k=min(k, len(self.ids)), show_progress=False, weight_mask=mask)
        return [(self.ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def top(self, question: str, k: int) -> list[tuple[str, float]]:
        """Top-``k`` (id, BM25 score) pairs as :meth:`search` gives them, except that a cut inside a tie keeps the
        smallest ids (every document is scored, bm25s ``get_scores``, and the tie at the ``k``-th score is ordered
        by id), so the cut does not depend on how bm25s selects among equal scores: the Entity.name seeds, whose
        names often score alike (kbgraph.query.propagation.seeding ``entity_name_seeds``)."""
        import numpy as np

        bm25s = load_library()
        if self.retriever is None or k < 1:
            return []
        query = bm25s.tokenize([question], stopwords="en", stemmer=self._stem, return_ids=False, show_progress=False)
        if not query[0]:
            return []
        scores = self.retriever.get_scores(query[0])
        k = min(k, len(scores))
        kth = np.partition(scores, -k)[-k]
        tied = np.flatnonzero((scores >= kth) & (scores > 0))
        best = sorted(tied.tolist(), key=lambda i: (-scores[i], self.ids[i]))[:k]
        return [(self.ids[i], float(scores[i])) for i in best]

    def text(self, doc_id: str) -> str:
        """The indexed text of ``doc_id`` when the corpus keeps its texts (:attr:`Corpus.keep_texts`), else ''."""
        return self._text_of.get(doc_id, "")

    def _mask(self, within: frozenset[str]) -> Any:
        """float32 (len(ids),): 1 for a chunk of ``within``, else 0; the last few kept (one per scope)."""
        with self._masks_lock:
            mask = self._masks.get(within)
            if mask is None:
                import numpy as np

                mask = np.fromiter((cid in within for cid in self.ids), dtype=np.float32, count=len(self.ids))
                self._masks[within] = mask
                while len(self._masks) > 8:
                    self._masks.pop(next(iter(self._masks)))
            return mask

    def retrieve(self, store: GraphStore, question: str, k: int) -> list[ScoredChunk]:
        """Top-``k`` chunks with provenance (``cypher/retrieve/chunk_details``), best first; score = BM25. In a
        document scope (kbgraph.store.scope), the scope's chunks only."""
        scope = current_scope()
        hits = self.search(question, k, within=None if scope is None else scope.chunks)
        details = chunk_details(store, [cid for cid, _ in hits])
        return [scored_chunk(details[cid], score) for cid, score in hits if cid in details]


def _write_meta(folder: Path, meta: dict[str, Any]) -> None:
    """Replace ``folder``'s kbgraph.json atomically (write to a temporary file, rename)."""
    tmp = folder / f".kbgraph.json.{threading.get_ident()}"
    try:
        tmp.write_text(json.dumps(meta))
        tmp.replace(folder / "kbgraph.json")
    except OSError as exc:  # a read-only home: the next open computes the fingerprint again
        log.debug("BM25 index meta not updated at %s: %s", folder, exc)


def _load_retriever(folder: Path, meta: dict[str, Any]) -> Any:
    """The bm25s retriever saved in ``folder`` (None for an index of no chunks, ``meta['ids']`` empty)."""
    bm25s = load_library()
    return bm25s.BM25.load(str(folder), show_progress=False) if meta["ids"] else None


def _load_generation(
    root: Path, generation: list[Any], salt: str
) -> tuple[Any, list[str], str, Path, list[str] | None] | None:
    """(retriever, ids, fingerprint, folder, texts or None) of the index under ``root`` saved at ``generation`` with the
    same ``salt`` (bm25s version, parameters, stemmer), or None."""
    if not root.is_dir():
        return None
    for folder in root.iterdir():
        if folder.name.startswith(".") or not (folder / "kbgraph.json").is_file():
            continue
        try:
            meta = json.loads((folder / "kbgraph.json").read_text())
            if meta.get("generation") != generation or meta.get("salt") != salt:
                continue
            return _load_retriever(folder, meta), meta["ids"], meta["fingerprint"], folder, meta.get("texts")
        except (OSError, ValueError, KeyError) as exc:
            log.warning("BM25 index at %s unreadable (%s)", folder, exc)
    return None


_SHARED: dict[str, tuple[list[Any], BM25Index]] = {}
_SHARED_LOCK = threading.Lock()


def shared_index(
    store: GraphStore,
    settings: Settings,
    *,
    k1: float = K1,
    b: float = B,
    generation: list[Any] | None = None,
    corpus: Corpus = CHUNKS,
) -> BM25Index:
    """This process's BM25 index (parameters ``k1``, ``b``) of the knowledge base ``settings`` name, for the
    learned ranker's BM25 features (kbgraph.query.propagation.propagate), method 'bm25' and MIGRES (or of ``corpus``:
    :data:`ENTITY_NAMES` for score propagation's Entity.name full-text seeds): kept in memory and
    re-checked only when :func:`corpus_generation` changes (one light statement per call, ~1 ms); then loaded
    from disk or rebuilt (:meth:`BM25Index.open`). Thread-safe; a first call on a new corpus builds the index (a
    few seconds per 100k chunks). ``generation``: :func:`corpus_generation` when the caller has just read it."""
    key = f"{index_root(settings, corpus)} k1={k1} b={b}"
    generation = corpus_generation(store) if generation is None else generation
    with _SHARED_LOCK:
        hit = _SHARED.get(key)
        if hit is not None and hit[0] == generation:
            return hit[1]
        index = BM25Index.open(store, settings, generation=generation, k1=k1, b=b, corpus=corpus)
        _SHARED[key] = (generation, index)
        return index


def retrieve_bm25(
    question: str, ctx: QueryContext, *, k: int, explain: bool = False, index: BM25Index | None = None
) -> list[ScoredChunk]:
    """Method 'bm25' of the registry: the top-``k`` chunks by BM25, best first, score = BM25 (``explain`` has
    no terms to add). ``index``: an open index of this knowledge base (else this process's, :func:`shared_index`)."""
    index = index if index is not None else shared_index(ctx.store, ctx.settings)
    return index.retrieve(ctx.store, question, k)
