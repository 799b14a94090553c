"""The FastAPI application of ``kbgraph serve``: the ``/v1`` routes (kbgraph.serve.routes), each authorized after
routing (kbgraph.serve.authz), the MCP tools at ``/mcp`` (streamable HTTP), the guard in front of everything (Host,
API keys, cross-site writes, JSON bodies, request size: kbgraph.serve.guard) and the mapping of library errors to
HTTP statuses (kbgraph.serve.errors), each response carrying the error's one-line message as ``detail``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from kbgraph import __version__
from kbgraph.errors import KBGraphError
from kbgraph.serve.access import KeyRing
from kbgraph.serve.errors import status_of
from kbgraph.serve.guard import Guard, is_loopback
from kbgraph.serve.jobs import JobManager
from kbgraph.serve.kbs import KBPool
from kbgraph.serve.explore import router as explore
from kbgraph.serve.mcp import build_mcp
from kbgraph.serve.metrics import Metrics, MetricsMiddleware
from kbgraph.serve.pages import PageCache
from kbgraph.serve.routes import router, service
from kbgraph.serve.webapp import WebApp
from kbgraph.settings import Settings
from kbgraph.text import one_line


def create_app(settings: Settings | None = None) -> FastAPI:
    """The application over ``settings`` (default: the environment's): knowledge bases are opened on first use
    and closed at shutdown. The caller binds it (``kbgraph serve`` checks the bind with
    :func:`kbgraph.serve.guard.check_bind` first)."""
    settings = settings or Settings()
    pool = KBPool(settings)
    metrics = Metrics(open_kbs=lambda: len(pool.names()))
    jobs = JobManager(pool, metrics=metrics)
    mcp = build_mcp(pool, jobs)
    mcp_app = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        host=settings.serve.serve_host,
        max_request_body_size=settings.serve.max_request_bytes,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            yield
        pool.close()

    app = FastAPI(
        title="kbgraph",
        version=__version__,
        lifespan=lifespan,
        description="A PIKE-RAG knowledge base on a graph database: ask, search, ingest, browse. MCP tools at /mcp.",
    )
    app.state.pool, app.state.jobs, app.state.mcp, app.state.metrics = pool, jobs, mcp, metrics
    app.state.pages = PageCache()  # the PDF page images of GET .../chunks/{id}/page.png
    app.include_router(service)
    app.include_router(router)
    app.include_router(explore)  # the web app's Explore and Runs routes (kbgraph.serve.explore)
    app.router.routes.extend(mcp_app.routes)  # POST/GET/DELETE /mcp, under the same guard

    @app.exception_handler(KBGraphError)
    async def _library_error(_request: Request, exc: KBGraphError) -> JSONResponse:
        return JSONResponse({"detail": one_line(exc, 1000), "error": type(exc).__name__}, status_code=status_of(exc))

    @app.exception_handler(ValidationError)
    async def _settings_error(_request: Request, exc: ValidationError) -> JSONResponse:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "settings"
        return JSONResponse(
            {"detail": f"invalid setting {where}: {first['msg']}", "error": "ValidationError"}, status_code=400
        )

    key = settings.serve.api_key.get_secret_value() if settings.serve.api_key else None
    keys = KeyRing(master=key or None, path=settings.serve.api_keys_file)
    serve = settings.serve
    hosts = serve.serve_allowed_hosts if is_loopback(serve.serve_host) or serve.serve_allowed_hosts else None
    app.add_middleware(
        Guard,
        keys=keys,
        max_bytes=serve.max_request_bytes,
        max_upload_bytes=serve.max_upload_bytes,
        allowed_hosts=hosts,
        allowed_origins=serve.serve_allowed_origins,
    )
    app.add_middleware(MetricsMiddleware, metrics=metrics)  # outside the guard: its refusals are counted too
    app.add_middleware(WebApp, allowed_hosts=hosts)  # the web app at / (outside the guard: its files need no key)
    return app
