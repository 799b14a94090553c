"""A statement that takes longer than redis-py's default socket timeout (5 s) is waited for, not reported as a lost
server: on the embedded FalkorDB a write batch into a large graph's vector indexes on a busy machine takes that
long (the 100,000-passage ingest of benchmarks/scale.py failed with "lost the connection ... Timeout reading from
socket"). The server is held back with Redis's own CLIENT PAUSE for 6.5 s while the store runs a statement."""

from __future__ import annotations

import threading
import time
import uuid

import redis

from kbgraph.settings import Settings
from kbgraph.store import open_store
from kbgraph.store.falkordb import FalkorDBStore


def test_a_statement_slower_than_five_seconds_is_waited_for(falkor_settings: Settings) -> None:
    settings = falkor_settings.updated({"name": f"t{uuid.uuid4().hex[:10]}"})
    store = open_store(settings)
    try:
        store.ensure_schema()
        assert isinstance(store, FalkorDBStore) and store.server is not None  # the embedded store
        pauser = redis.Redis(unix_socket_path=str(store.server.socket))
        pauser.execute_command("CLIENT", "PAUSE", "6500", "ALL")  # every client's next command waits 6.5 s
        started = time.monotonic()
        done: list[object] = []
        worker = threading.Thread(target=lambda: done.append(store.stats()))
        worker.start()
        worker.join(60)
        took = time.monotonic() - started
        assert done, "the statement did not come back"
        assert took > 5.5, f"the pause did not hold the statement back ({took:.1f} s): the test proves nothing"
        pauser.close()
    finally:
        store.clear()
        store.close()
