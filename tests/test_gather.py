"""kbgraph.store.parallel.gather: independent reads run at once on a store that allows it (the seeds of a
question: vector, full-text and BM25, kbgraph.query.propagation.seeding.seed_layers), one after the other otherwise;
results in order, errors raised to the caller."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import cast

import pytest

from kbgraph.store.base import GraphStore
from kbgraph.store.parallel import gather


class _Store:
    def __init__(self, parallel: bool) -> None:
        self.parallel_reads = parallel


def _store(parallel: bool) -> GraphStore:
    """A stand-in GraphStore with only ``parallel_reads``, the one member gather reads."""
    return cast(GraphStore, _Store(parallel))


def test_parallel_reads_run_at_once_and_keep_their_order() -> None:
    barrier = threading.Barrier(3, timeout=5)  # passes only when all three calls run at the same time

    def call(i: int) -> Callable[[], int]:
        return lambda: (barrier.wait(), i)[1]

    assert gather(_store(True), call(0), call(1), call(2)) == (0, 1, 2)


def test_without_parallel_reads_calls_run_one_after_the_other() -> None:
    running, peak = [0], [0]
    lock = threading.Lock()

    def call(i: int) -> Callable[[], tuple[str, int]]:
        def run() -> tuple[str, int]:
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            with lock:
                running[0] -= 1
            return threading.current_thread().name, i

        return run

    got = gather(_store(False), call(0), call(1))
    assert [i for _, i in got] == [0, 1] and peak[0] == 1
    assert {name for name, _ in got} == {threading.current_thread().name}


def test_an_error_of_any_call_reaches_the_caller_after_all_finished() -> None:
    done = []

    def fail() -> int:
        raise ValueError("boom")

    def slow() -> int:
        threading.Event().wait(0.2)
        done.append(1)
        return 1

    with pytest.raises(ValueError, match="boom"):
        gather(_store(True), slow, fail)
    with pytest.raises(ValueError, match="boom"):
        gather(_store(True), fail, slow)
    assert done == [1, 1]
