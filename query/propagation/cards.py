"""The document cards: a BM25 index over one short text per Document, so that a question naming a document's
issuer, year, revision or version finds that document among look-alikes (issue 56, "documents that can be told
apart"; benchmarks/HISTORY.md, "Document key facts in the Document layer": a BM25 index over such per-document
text helped the look-alike series where a Document vector over key-fact labels did not).

A document's **card** (:func:`card_text`) is its title, its other usable titles (``title_alternatives``,
kbgraph.ingest.titles), its file name's words (:func:`file_name_words`: ``AMAZON_2017_10K.pdf`` -> ``AMAZON 2017 10K``) and the beginning of its first page (the first chunks of page 1, at most
:data:`FIRST_PAGE_CHARS` characters), where a report prints what tells it from the next year's. The cards are
read from the store in pages (``cypher/retrieve/document_cards``: every 'complete' document) and indexed with
kbgraph.query.bm25's tokenizer and scoring (:func:`kbgraph.query.bm25.build_retriever`, searched as a
:class:`kbgraph.query.bm25.BM25Index` whose ids are document ids). The index lives in memory, one per knowledge base
and corpus generation (:func:`shared_cards`, as kbgraph.query.bm25's ``shared_index``): a few KB per document,
built at the first question of a generation.

Score propagation's seeding (kbgraph.query.propagation.seeding) makes the question's best cards the
``DocumentText`` layer (:func:`card_seeds`): BM25 score over the question's best, in [0, 1], a prior w_DT · b(q,
d(c)) for the chunks of those documents that already score (docs/scoring.md). In a document scope (a filter,
kbgraph.store.scope) only the scope's documents' cards are scored.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote

from kbgraph.query.bm25 import BM25Index, _stemmer, build_retriever, index_root
from kbgraph.settings import Settings
from kbgraph.store import GraphStore
from kbgraph.store.scope import current_scope

log = logging.getLogger(__name__)

#: Documents per page when reading the cards from the store.
PAGE = 2000
#: At most this many characters of a document's first page go into its card.
FIRST_PAGE_CHARS = 1000
#: The question's best cards that become DocumentText seeds.
CARD_K = 5
#: A document of fewer chunks has no card: a passage's card would be the passage, which the full-text term
#: already scores (on the repo's passage sets a card per passage moved MuSiQue's R@2 by -4.5 with w_DT 0.1).
MIN_CHUNKS = 2
_FILE_NAME_SEPARATORS = re.compile(r"[_.\-\s]+")
_REVISION = re.compile(r"(?:\b(?:revision|rev)\.?\s*|(?<=\d)r)(\d+)\b", re.IGNORECASE)
_DOTTED = re.compile(r"(?<=\d)\.(?=\d)")
_LETTER_DIGIT = re.compile(r"(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")


def card_words(text: str) -> str:
    """``text`` with what tells look-alike documents apart made tokens of kbgraph.query.bm25's tokenizer (words of
    two or more word characters), applied to the cards and to the question alike: a revision ``Revision 2``,
    ``Rev. 2``, ``126r2`` -> ``rev_2``; a dotted version ``1.2`` -> ``1_2``; letters and digits glued together
    apart (``FY2010`` -> ``FY 2010``, ``2010AnnualReport`` -> ``2010 AnnualReport``)."""
    text = _REVISION.sub(r" rev_\1 ", text)
    return _LETTER_DIGIT.sub(" ", _DOTTED.sub("_", text))


def file_name_words(path: str) -> str:
    """The words of a file name: its stem with runs of ``_``, ``-``, ``.`` and spaces as one space
    (``AMAZON_2017_10K.pdf`` -> ``AMAZON 2017 10K``; bm25s's tokenizer would keep ``AMAZON_2017_10K`` one token)."""
    return _FILE_NAME_SEPARATORS.sub(" ", PurePosixPath(path).stem).strip()


def card_text(row: dict[str, Any]) -> str:
    """The card of a ``retrieve/document_cards`` row: title, alternatives, the file name's words (from ``uri``) and
    the first page's texts cut at :data:`FIRST_PAGE_CHARS` characters, one per line ('' for none of them)."""
    uri = str(row.get("uri") or "")
    path = unquote(uri[len("file://") :]) if uri.startswith("file://") else uri
    first = " ".join(str(t) for t in row.get("texts") or [] if t)[:FIRST_PAGE_CHARS]
    parts = [str(row.get("title") or ""), *(str(a) for a in row.get("alternatives") or [] if a)]
    parts += [file_name_words(path) if path else "", first]
    return "\n".join(p for p in parts if p.strip())


class Cards:
    """The card index of one corpus generation: ``index`` (a :class:`~kbgraph.query.bm25.BM25Index` over the cards,
    ``index.ids`` the document ids) and ``titles`` {document id: its title} (the text ``--explain`` shows)."""

    def __init__(self, index: BM25Index, titles: dict[str, str]) -> None:
        self.index = index
        self.titles = titles

    @classmethod
    def build(cls, store: GraphStore) -> Cards:
        """The cards of every 'complete' document of ``store`` of at least :data:`MIN_CHUNKS` chunks
        (``retrieve/document_cards``, read in pages of :data:`PAGE`). Raises ImportError as kbgraph.query.bm25 ``load_library``; StoreError as ``GraphStore.run``."""
        t0 = time.perf_counter()
        ids, texts, titles = [], [], {}
        for row in store.run_pages("retrieve/document_cards", PAGE):
            text = card_text(row) if (row.get("chunks") or 0) >= MIN_CHUNKS else ""
            if text:
                ids.append(row["id"])
                texts.append(card_words(text))
                titles[row["id"]] = str(row.get("title") or "")
        index = BM25Index(build_retriever(texts), ids, fingerprint="", folder=None, stemmer=_stemmer()[1], built=True)
        log.info("document cards of %d documents indexed in %.2f s", len(ids), time.perf_counter() - t0)
        return cls(index, titles)

    def search(self, question: str, k: int, *, within: frozenset[str] | None = None) -> list[tuple[str, float]]:
        """The best ``k`` (document id, BM25 score) for ``question``, best first; ``within``: these document ids
        only (a scope's), with the whole corpus's term statistics. Cards sharing no term are left out. The question's
        and the cards' revisions, versions and years are tokens of their own (:func:`card_words`)."""
        return self.index.search(card_words(question), k, within=within)


_SHARED: dict[str, tuple[list[Any], Cards]] = {}
_LOCK = threading.Lock()


def shared_cards(store: GraphStore, settings: Settings, generation: list[Any]) -> Cards:
    """This process's card index of the knowledge base ``settings`` names at corpus ``generation``
    (kbgraph.query.bm25 ``corpus_generation``): kept in memory, built again when the generation changes.
    Thread-safe. Raises as :meth:`Cards.build`."""
    key = str(index_root(settings))
    with _LOCK:
        hit = _SHARED.get(key)
        if hit is not None and hit[0] == generation:
            return hit[1]
        cards = Cards.build(store)
        _SHARED[key] = (list(generation), cards)
        return cards


def card_seeds(
    store: GraphStore, settings: Settings, question: str, generation: list[Any], k: int = CARD_K
) -> dict[str, tuple[float, str]]:
    """The ``DocumentText`` seeds of ``question``: {document id: (BM25 score over the best card's, in (0, 1]; the
    document's title)} of its best ``k`` cards, the current document scope's only (kbgraph.store.scope); {} when
    setting ``weight_document_text`` is 0 or no card shares a term with the question."""
    if not settings.retrieval.weight_document_text or k < 1:
        return {}
    scope = current_scope()
    cards = shared_cards(store, settings, generation)
    hits = cards.search(question, k, within=None if scope is None else scope.documents)
    top = hits[0][1] if hits else 0.0
    return {doc: (score / top, cards.titles.get(doc, "")) for doc, score in hits if top > 0}
