"""Independent reads of one store at once (the seeds of a question: vector, full-text and BM25,
kbgraph.query.seeding.seed_layers), on stores that allow it (``GraphStore.parallel_reads``)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, TypeVar, overload

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
def gather(store: GraphStore, a: Callable[[], A], b: Callable[[], B], c: Callable[[], C], d: Callable[[], D], /
           ) -> tuple[A, B, C, D]: ...  # fmt: skip
@overload
def gather(store: GraphStore, *calls: Callable[[], T]) -> tuple[T, ...]: ...
def gather(store: GraphStore, *calls: Callable[[], Any]) -> tuple[Any, ...]:
    """The results of ``calls`` (independent reads of ``store``), as a tuple in their order (typed per call for
    two to four): the first runs in this thread and the others at once on a shared pool of 8 threads when
    ``store.parallel_reads``, else one after the other. A call's exception is raised here (after every call has
    finished). Calls must not gather themselves."""
    if not store.parallel_reads or len(calls) < 2:
        return tuple(call() for call in calls)
    futures = [_GATHER.submit(call) for call in calls[1:]]
    try:
        first = calls[0]()
    finally:
        wait(futures)
    return (first, *(f.result() for f in futures))
