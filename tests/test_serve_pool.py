"""The pool of open knowledge bases of `kbgraph serve` (kbgraph.serve.kbs.KBPool) on the embedded FalkorDB:
requests of one knowledge base run at once, each on a connection of its own, up to serve_store_connections;
one more waits; a connection a failed request may have broken is not handed out again (issue 29)."""

from __future__ import annotations

import threading
import uuid

import pytest

from kbgraph.errors import StoreError
from kbgraph.serve.kbs import KBPool


@pytest.fixture
def pool(falkor_settings):
    p = KBPool(falkor_settings.model_copy(update={"name": f"pool{uuid.uuid4().hex[:8]}", "serve_store_connections": 2}))
    yield p
    p.close()


def test_two_requests_of_one_kb_overlap_each_on_its_own_connection(pool):
    """Both holders meet inside ``use`` (a barrier of two): with one lock per knowledge base, as before, the
    second could not enter until the first left and the barrier breaks."""
    name = pool.default
    meet = threading.Barrier(2, timeout=20)
    held, errors = [], []

    def request():
        try:
            with pool.use(name) as kb:
                held.append(kb)
                meet.wait()  # both inside at once
                assert kb.store.run("retrieve/chunk_titles", {"ids": []}) == []
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=request) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == [] and len(held) == 2
    assert held[0] is not held[1] and held[0].store is not held[1].store
    # both connections are kept for the next requests
    with pool.use(name) as a, pool.use(name) as b:
        assert {id(a), id(b)} == {id(k) for k in held}


def test_the_request_past_the_bound_waits(pool):
    name = pool.default
    inside, most = 0, 0
    lock = threading.Lock()
    go = threading.Event()

    def request():
        nonlocal inside, most
        with pool.use(name):
            with lock:
                inside += 1
                most = max(most, inside)
            go.wait(5)
            with lock:
                inside -= 1

    threads = [threading.Thread(target=request) for _ in range(4)]
    for t in threads:
        t.start()
    threading.Event().wait(1.0)  # let every thread reach the pool
    with lock:
        assert inside == 2  # serve_store_connections: two in, two waiting
    go.set()
    for t in threads:
        t.join(30)
    assert most == 2 and inside == 0


def test_a_store_error_drops_that_connection(pool):
    name = pool.default
    with pytest.raises(StoreError):
        with pool.use(name) as broken:
            raise StoreError("connection lost")
    with pool.use(name) as kb:
        assert kb is not broken
