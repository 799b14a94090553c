"""``GET /metrics`` of ``kbgraph serve``: Prometheus text format (prometheus-client), one registry per application
(never the process-wide default, so two applications in one process count apart).

* ``kbgraph_http_requests_total{route, method, status}``: requests by **route template** (``/v1/kb/{name}/ask``,
  never the raw path: no knowledge-base name, chunk id or document URI becomes a label); a request no route
  matched (refused by the guard, 404) is ``route="unmatched"``;
* ``kbgraph_http_request_duration_seconds{route}``: a latency histogram (a streamed answer: until its last event);
* ``kbgraph_asks_total{method}``: answers given (``POST .../ask``, JSON or streamed), by the method that answered;
* ``kbgraph_llm_calls_total``, ``kbgraph_llm_tokens_total{kind}`` (prompt, completion): what those answers spent
  (their ``usage``);
* ``kbgraph_ingested_documents_total``, ``kbgraph_ingested_chunks_total``: written by finished ingestion jobs;
  ``kbgraph_ingest_jobs_total{status}`` (done, failed);
* ``kbgraph_open_knowledge_bases``: the knowledge bases the server holds open now (a gauge).

Access: like ``/readyz``, authenticated by the guard (any valid key); the numbers are the whole server's, so only an
unrestricted caller (no keys configured, ``KBGRAPH_API_KEY``, or a key with every right on every knowledge base)
reads them, any other key gets a 403 (docs/serve.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kbgraph.serve.authz import route_path

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from kbgraph.ingest.report import IngestReport
    from kbgraph.query.models import Answer

__all__ = ["Metrics", "MetricsMiddleware", "UNMATCHED"]

#: The route label of a request no route matched.
UNMATCHED = "unmatched"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class Metrics:
    """The counters of one application; ``open_kbs``: how many knowledge bases are open (read at each scrape)."""

    def __init__(self, open_kbs: Callable[[], int] = lambda: 0):
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "kbgraph_http_requests",
            "HTTP requests by route template, method and status",
            ["route", "method", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "kbgraph_http_request_duration_seconds", "HTTP request latency by route template", ["route"], registry=r
        )
        self.asks = Counter("kbgraph_asks", "Answers given, by the method that answered", ["method"], registry=r)
        self.llm_calls = Counter("kbgraph_llm_calls", "LLM requests made for answers", registry=r)
        self.llm_tokens = Counter("kbgraph_llm_tokens", "LLM tokens spent on answers", ["kind"], registry=r)
        self.documents = Counter("kbgraph_ingested_documents", "Documents written by ingestion jobs", registry=r)
        self.chunks = Counter("kbgraph_ingested_chunks", "Chunks written by ingestion jobs", registry=r)
        self.jobs = Counter("kbgraph_ingest_jobs", "Ingestion jobs finished, by status", ["status"], registry=r)
        self.open_kbs = Gauge("kbgraph_open_knowledge_bases", "Knowledge bases open in the server", registry=r)
        self.open_kbs.set_function(lambda: float(open_kbs()))

    def answered(self, answer: Answer) -> None:
        """Count one answer and its LLM usage."""
        self.asks.labels(method=answer.method or "unknown").inc()
        usage = answer.usage
        if usage.calls:
            self.llm_calls.inc(usage.calls)
        if usage.prompt_tokens:
            self.llm_tokens.labels(kind="prompt").inc(usage.prompt_tokens)
        if usage.completion_tokens:
            self.llm_tokens.labels(kind="completion").inc(usage.completion_tokens)

    def ingested(self, report: IngestReport | None, status: str) -> None:
        """Count one finished ingestion job (``report`` None when it failed before writing)."""
        self.jobs.labels(status=status).inc()
        if report is not None:
            self.documents.inc(report.added + report.updated)
            self.chunks.inc(report.chunks)


class MetricsMiddleware:
    """ASGI middleware counting every HTTP request by the route the router matched (read from the scope after the
    application ran: Starlette's router leaves ``scope["route"]``) and the status the response began with."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        status = 500
        started = time.perf_counter()

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            route = scope.get("route")
            label = route_path(route) if route is not None else UNMATCHED
            method = scope.get("method", "GET")
            method = method if method in METHODS else "other"  # a label of the methods HTTP has, not any token
            self.metrics.requests.labels(route=label, method=method, status=str(status)).inc()
            self.metrics.latency.labels(route=label).observe(time.perf_counter() - started)
