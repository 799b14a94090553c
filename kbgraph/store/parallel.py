"""Independent reads of one store at once (the seeds of a question: vector, full-text and BM25,
kbgraph.query.propagation.seeding.seed_layers), on stores that allow it (``GraphStore.parallel_reads``); and readers in threads
of their own (:func:`background`) that a store's ``close`` waits for (:func:`quiesce`)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
import contextvars
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, overload

from kbgraph.errors import StoreUnavailable

if TYPE_CHECKING:
    from kbgraph.store.base import GraphStore

T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")
D = TypeVar("D")

_GATHER = ThreadPoolExecutor(max_workers=8, thread_name_prefix="kbgraph-read")


@overload
def gather(store: GraphStore, a: Callable[[], A], b: Callable[[], B], /) -> tuple[A, B]: ...
@overload
def gather(store: GraphStore, a: Callable[[], A], b: Callable[[], B], c: Callable[[], C], /) -> tuple[A, B, C]: ...
@overload
def gather(
    store: GraphStore, a: Callable[[], A], b: Callable[[], B], c: Callable[[], C], d: Callable[[], D], /
) -> tuple[A, B, C, D]: ...
@overload
def gather(store: GraphStore, *calls: Callable[[], T]) -> tuple[T, ...]: ...
def gather(store: GraphStore, *calls: Callable[[], Any]) -> tuple[Any, ...]:
    """The results of ``calls`` (independent reads of ``store``), as a tuple in their order (typed per call for
    two to four): the first runs in this thread and the others at once on a shared pool of 8 threads when
    ``store.parallel_reads``, else one after the other. A call's exception is raised here (after every call has
    finished). Calls must not gather themselves."""
    if not store.parallel_reads or len(calls) < 2:
        return tuple(call() for call in calls)
    # each read in a copy of this context: the caller's document scope (kbgraph.store.scope) goes with it
    futures = [_GATHER.submit(contextvars.copy_context().run, call) for call in calls[1:]]
    try:
        first = calls[0]()
    finally:
        wait(futures)
    return (first, *(f.result() for f in futures))


class _Background:
    """The readers of one store working in threads of their own, and whether the store is closing."""

    def __init__(self) -> None:
        self.readers = 0
        self.closing = False
        self.changed = threading.Condition()


_BACKGROUND: weakref.WeakKeyDictionary[GraphStore, _Background] = weakref.WeakKeyDictionary()
_BACKGROUND_LOCK = threading.Lock()


def _state(store: GraphStore) -> _Background:
    with _BACKGROUND_LOCK:
        state = _BACKGROUND.get(store)
        if state is None:
            state = _BACKGROUND[store] = _Background()
        return state


@contextmanager
def background(store: GraphStore) -> Iterator[None]:
    """Count a reader of ``store`` in a thread of its own (kbgraph.query.propagation.adjacency's build) while the block runs,
    so that closing the store waits for it (:func:`quiesce`) instead of cutting its connection mid-reply (the
    Neo4j driver's close raised BufferError from under such a reader). Raises StoreUnavailable when the store is
    already closing; the reader should look at :func:`closing` between its reads and stop."""
    state = _state(store)
    with state.changed:
        if state.closing:
            raise StoreUnavailable(f"the store at {store.location} is closing")
        state.readers += 1
    try:
        yield
    finally:
        with state.changed:
            state.readers -= 1
            state.changed.notify_all()


def closing(store: GraphStore) -> bool:
    """True once ``store`` has begun to close (:func:`quiesce`)."""
    state = _BACKGROUND.get(store)
    return state is not None and state.closing


def quiesce(store: GraphStore, timeout: float = 30.0) -> None:
    """Mark ``store`` closing and wait, at most ``timeout`` seconds, for its :func:`background` readers to end
    (each ends at its next read). Every store's ``close`` calls it first."""
    state = _BACKGROUND.get(store)
    if state is None:
        return
    with state.changed:
        state.closing = True
        state.changed.wait_for(lambda: state.readers == 0, timeout)
