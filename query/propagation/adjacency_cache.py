"""This process's copy of each knowledge base's graph in memory (kbgraph.query.propagation.adjacency
:class:`~kbgraph.query.propagation.adjacency.Adjacency`), one per store object and corpus generation, built in a
background thread at the second question of a generation (docs/scoring.md, "What one question costs")."""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any

from kbgraph.query.propagation.adjacency import Adjacency
from kbgraph.settings import Settings
from kbgraph.store import GraphStore
from kbgraph.store.parallel import background

log = logging.getLogger(__name__)


class _Entry:
    """One knowledge base's adjacency in this process: the generation it is for, how many questions asked for
    it, and the built view (None while building or before)."""

    def __init__(self, generation: list[Any]) -> None:
        self.generation = generation
        self.asked = 0
        self.view: Adjacency | None = None
        self.building = False
        self.failed = False  # a build of this generation failed: not tried again until the next generation


#: One entry per connected store object (a knowledge base's store in this process), dropped with the store.
_SHARED: weakref.WeakKeyDictionary[GraphStore, _Entry] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def shared_adjacency(
    store: GraphStore, settings: Settings, generation: list[Any] | None, *, wait: bool = False
) -> Adjacency | None:
    """This process's :class:`Adjacency` of ``store`` at ``generation`` (kbgraph.query.bm25 ``corpus_generation``,
    read by the caller), or None: with setting ``adjacency_cache`` off, without a generation, at the first question
    of a generation, and while the background build started by the second runs. It is kept per store object (a
    knowledge base opened anew reads its graph anew) and dropped with it. ``wait``: build it now in this thread
    (tests, benchmarks). A failed build is logged and not tried again before the next generation (or a new store
    object); the statements answer meanwhile."""
    if not settings.retrieval.adjacency_cache or generation is None:
        return None
    with _LOCK:
        entry = _SHARED.get(store)
        if entry is None or entry.generation != generation:
            entry = _SHARED[store] = _Entry(generation)
        entry.asked += 1
        if entry.view is not None or entry.building or entry.failed:
            return entry.view
        if not wait and entry.asked < 2:
            return None
        entry.building = True
    if wait:
        _build(store, entry)
        return entry.view
    threading.Thread(target=_build, args=(store, entry), name="kbgraph-adjacency", daemon=True).start()
    return None


def _build(store: GraphStore, entry: _Entry) -> None:
    view: Adjacency | None = None
    try:
        with background(store):  # the store's close waits for this build (or stops it at its next row)
            try:
                view = Adjacency(store)
            finally:  # settled before the close waiting for this build returns
                _settle(entry, view)
    except Exception as exc:  # a closed or unreachable store: the statements keep answering
        log.warning("adjacency of %s not built (%s); score propagation reads the store", store.location, exc)
        _settle(entry, None)
    if view is not None:
        log.info("adjacency of %s: %d chunks in memory", store.location, len(view))


def _settle(entry: _Entry, view: Adjacency | None) -> None:
    """The build of ``entry`` is over: ``view`` is its result, or None for a build that failed or was stopped."""
    with _LOCK:
        entry.view, entry.building, entry.failed = view, False, view is None
