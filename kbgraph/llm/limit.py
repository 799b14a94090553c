"""A bound on the LLM requests in flight per endpoint: ``llm_max_concurrency``.

A llama.cpp server answers as many requests at once as it has slots (``llama-server --parallel N``; ``kbgraph llm
start --parallel N``); a request past them waits in the server's queue while its client's timeout runs, and one
abandoned by the timeout keeps its slot until it finishes. So every :class:`kbgraph.llm.client.OpenAIClient` of
the process that talks to one endpoint (base URL) takes a slot of one shared semaphore for each request, the
whole request (retries and a streamed answer's reading included); the request past the bound waits in the
client, where no slot is taken.

The bound of an endpoint, fixed by its first client in the process:

* ``llm_max_concurrency`` when set;
* else the server's slots: the ``parallel`` of the launch record of ``kbgraph llm start`` when the endpoint is
  that local server, else the ``total_slots`` its ``/props`` reports (llama-server; asked once, 2 s at most);
* else :data:`DEFAULT_BOUND` (an endpoint that says nothing of its slots: OpenAI, vLLM, ...).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING
from kbgraph.llm.llama import http_get
from kbgraph.llm.server import LocalLLMServer

if TYPE_CHECKING:
    from kbgraph.settings import Settings

#: The bound of an endpoint that reports no slots.
DEFAULT_BOUND = 8
_PROBE_TIMEOUT = 2.0


class EndpointLimit:
    """At most ``bound`` requests in flight to ``endpoint``; ``with limit.slot():`` around one request.
    ``in_flight`` and ``most`` (the highest ``in_flight`` seen) are for reports and tests."""

    def __init__(self, endpoint: str, bound: int, source: str):
        self.endpoint = endpoint
        self.bound = bound
        self.source = source  # where the bound came from: 'setting', 'server', 'default'
        self._slots = threading.BoundedSemaphore(bound)
        self._lock = threading.Lock()
        self.in_flight = 0
        self.most = 0

    @contextmanager
    def slot(self) -> Iterator[None]:
        with self._slots:
            with self._lock:
                self.in_flight += 1
                self.most = max(self.most, self.in_flight)
            try:
                yield
            finally:
                with self._lock:
                    self.in_flight -= 1


_LIMITS: dict[str, EndpointLimit] = {}
_GUARD = threading.Lock()


def endpoint_limit(settings: Settings) -> EndpointLimit:
    """The process's shared limit of the endpoint ``settings.llm.llm_base_url`` (api.openai.com without one), made by
    its first caller with the bound of the module doc. Raises nothing: a server that cannot be asked gets the
    default bound."""
    endpoint = (settings.llm.llm_base_url or "https://api.openai.com/v1").rstrip("/")
    with _GUARD:
        limit = _LIMITS.get(endpoint)
        if limit is None:
            bound, source = _bound(settings, endpoint)
            limit = _LIMITS[endpoint] = EndpointLimit(endpoint, bound, source)
        return limit


def forget(endpoint: str | None = None) -> None:
    """Drop the limit of ``endpoint`` (every endpoint when None): its next client sizes it again (tests; a server
    restarted with other slots)."""
    with _GUARD:
        if endpoint is None:
            _LIMITS.clear()
        else:
            _LIMITS.pop(endpoint.rstrip("/"), None)


def _bound(settings: Settings, endpoint: str) -> tuple[int, str]:
    if settings.llm.llm_max_concurrency is not None:
        return int(settings.llm.llm_max_concurrency), "setting"
    slots = _local_server_slots(settings, endpoint) or _props_slots(endpoint)
    if slots:
        return slots, "server"
    return DEFAULT_BOUND, "default"


def _local_server_slots(settings: Settings, endpoint: str) -> int | None:
    """The ``parallel`` of the running local server (``kbgraph llm start``) when ``endpoint`` is its URL."""

    status = LocalLLMServer(settings).status()
    if status.pid is not None and status.base_url.rstrip("/") == endpoint and status.parallel:
        return int(status.parallel)
    return None


def _props_slots(endpoint: str) -> int | None:
    """``total_slots`` of llama-server's ``GET /props`` at the root of ``endpoint``; None for another server."""
    root = endpoint[: -len("/v1")] if endpoint.endswith("/v1") else endpoint
    if not root.startswith(("http://", "https://")):
        return None
    code, body = http_get(f"{root}/props", timeout=_PROBE_TIMEOUT)
    if code != 200:
        return None
    try:
        slots = json.loads(body).get("total_slots")
    except (ValueError, AttributeError):
        return None
    return slots if isinstance(slots, int) and slots > 0 else None
