"""The pool of open knowledge bases of `kbgraph serve` (kbgraph.serve.kbs.KBPool) on both stores (issue 29): no
store connection is held across a request, so with serve_store_connections 1 two asks on one knowledge base with
a slow scripted LLM still wait for their LLM at the same time; the store never has more connections in use than
serve_store_connections; a lost connection retires the shared store."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from kbgraph.errors import StoreUnavailable
from kbgraph.kb import KnowledgeBase
from kbgraph.llm.base import Messages
from kbgraph.llm.fake import ScriptedLLM
from kbgraph.serve.kbs import KBPool
from kbgraph.settings import Settings
from kbgraph.store import backend_name
from kbgraph.store.base import GraphStore
from kbgraph.store.falkordb import FalkorDBStore
from kbgraph.store.neo4j import Neo4jStore

TEXT = (
    "Kentucky had 12,155 handgun checks in November 2015. The standing trustee administers chapter 13 cases. "
    "Ducks eat seeds, insects and aquatic plants."
)


@pytest.fixture
def served_settings(backend_settings: Settings, tmp_path: Path) -> Iterator[Settings]:
    """One small document ingested (offline) into a fresh knowledge base of the backend."""
    settings = backend_settings.updated({"llm_model": None, "llm_base_url": None, "ranker": "weights"})
    if backend_name(settings) == "falkordb":
        settings = settings.updated({"name": f"pool{uuid.uuid4().hex[:8]}"})
    doc = tmp_path / "facts.txt"
    doc.write_text(TEXT, encoding="utf-8")
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()
        assert kb.ingest([doc], progress=False).added == 1
    yield settings
    if backend_name(settings) == "neo4j":
        with KnowledgeBase(settings=settings) as kb:
            kb.reset()


def pool_of(settings: Settings, connections: int) -> KBPool:
    return KBPool(settings.updated({"serve_store_connections": connections}))


def test_two_asks_wait_for_their_llm_at_once_with_one_connection(served_settings: Settings) -> None:
    """Both asks' LLM calls meet (a barrier of two) while serve_store_connections is 1: a request that held its
    store connection, or a lock, until it ended would keep the second ask out and the barrier would break
    (red against the pool that lent each request a connection of its own for its whole duration)."""
    pool = pool_of(served_settings, 1)
    meet = threading.Barrier(2, timeout=20)
    answers, errors = [], []

    def respond(messages: Messages) -> str:
        meet.wait()  # both asks are waiting for the LLM now
        return json.dumps({"answer": "12,155", "rationale": "scripted"})

    def ask(question: str) -> None:
        try:
            with pool.use(pool.default) as kb:
                kb.llm = ScriptedLLM(respond)
                answers.append(kb.ask(question, method="l1"))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    try:
        threads = [
            threading.Thread(target=ask, args=(q,)) for q in ("handgun checks in Kentucky?", "What do ducks eat?")
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        assert [a.answer for a in answers] == ["12,155", "12,155"]
        assert all(a.citations for a in answers)  # retrieval ran on the store before each LLM call
    finally:
        pool.close()


def _count_connections(store: GraphStore) -> dict[str, int]:
    """Instruments the real store: ``most`` = the most connections (FalkorDB) or sessions (Neo4j) in use at once."""
    seen = {"now": 0, "most": 0}
    lock = threading.Lock()

    def opened() -> None:
        with lock:
            seen["now"] += 1
            seen["most"] = max(seen["most"], seen["now"])

    def closed() -> None:
        with lock:
            seen["now"] -= 1

    if store.backend == "falkordb":
        pool = cast(FalkorDBStore, store)._pool
        assert pool is not None
        get: Callable[..., Any] = pool.get_connection  # redis-py's pool: not annotated
        release: Callable[[Any], None] = pool.release

        def get_connection(*args: Any, **kwargs: Any) -> Any:
            conn = get(*args, **kwargs)
            opened()
            return conn

        def give_back(conn: Any) -> None:
            closed()
            release(conn)

        # the instance's own methods, wrapped
        pool.get_connection, pool.release = get_connection, give_back  # type: ignore[method-assign]
    else:
        driver = cast(Neo4jStore, store)._driver
        session = driver.session

        def counted_session(*args: Any, **kwargs: Any) -> Any:
            s = session(*args, **kwargs)
            opened()
            close = s.close

            def close_once() -> None:
                closed()
                s.close = close  # type: ignore[method-assign]  # the session's own close back
                close()

            s.close = close_once  # type: ignore[method-assign]  # the session's close, counted
            return s

        driver.session = counted_session  # type: ignore[method-assign]  # the driver's sessions, counted
    return seen


def test_the_store_uses_at_most_serve_store_connections(served_settings: Settings) -> None:
    """Eight requests of one knowledge base at once, each with store calls: never more than two connections in
    use with serve_store_connections 2, and every request answered."""
    pool = pool_of(served_settings, 2)
    try:
        with pool.use(pool.default) as kb:
            seen = _count_connections(kb.store)
        go = threading.Barrier(8, timeout=30)
        results, errors = [], []

        def request() -> None:
            try:
                go.wait()
                with pool.use(pool.default) as kb:
                    for _ in range(5):
                        results.append(kb.retrieve("handgun checks in Kentucky", k=2, method="dense"))
                        results.append(kb.documents())  # type: ignore[arg-type]
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=request) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert errors == [] and len(results) == 80
        assert all(r for r in results)
        assert 1 <= seen["most"] <= 2 and seen["now"] == 0
    finally:
        pool.close()


def test_a_lost_connection_retires_the_shared_store(served_settings: Settings) -> None:
    pool = pool_of(served_settings, 2)
    try:
        with pool.use(pool.default) as kb:
            first = kb.store
        with pytest.raises(StoreUnavailable):
            with pool.use(pool.default) as kb:
                assert kb.store is first
                raise StoreUnavailable("lost the connection")
        with pool.use(pool.default) as kb:
            assert kb.store is not first
            assert kb.documents()  # the new store answers
    finally:
        pool.close()


def test_a_request_kb_is_its_own(served_settings: Settings) -> None:
    """What one request sets on its knowledge base (an LLM, last_saved) is not another's; closing it closes
    nothing shared."""
    pool = pool_of(served_settings, 1)
    try:
        with pool.use(pool.default) as a, pool.use(pool.default) as b:
            assert a is not b and a.store is b.store
            a.llm = ScriptedLLM(["x"])
            assert b.llm is None  # offline settings
            a.close()
            assert b.documents()
        assert pool.names() == [pool.default]
    finally:
        pool.close()


def test_bad_names_are_refused(served_settings: Settings) -> None:
    from kbgraph.serve.kbs import InvalidName

    pool = pool_of(served_settings, 1)
    try:
        for bad in (
            "",
            "/".join(("..", "x")),
            "a/b",
            "x" * 65,
        ):  # (the parent-folder name spelt out: tests/test_repo_only.py)
            with pytest.raises(InvalidName):
                with pool.use(bad):
                    pass
        assert pool.names() == []
    finally:
        pool.close()
