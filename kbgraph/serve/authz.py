"""Which right each route of ``kbgraph serve`` needs, checked on what the router routed.

The guard (kbgraph.serve.guard) authenticates a request before routing; authorization happens here, after it:
:func:`authorize` is a dependency of every ``/v1`` route (``APIRouter(dependencies=...)``), so it sees the route
the router matched and its **decoded** path parameters. A percent-encoded path (``/v1/%6Bb/other/ask``,
``/v1%2Fkb/other/ask``, ``/v1/kb/default/%69ngest``) is routed as its decoded form and checked as that form: the
decision is the canonical path's.

:data:`ROUTE_RIGHTS` is the one table of the routes and the right each needs; a route that is not in it is
refused (fail closed), and tests/test_serve_authz.py walks the application's own route list against it:

* ``open``: no key needed (``GET /healthz``);
* ``key``: any valid key (the API description; ``/readyz`` shows names and paths only to an unrestricted key;
  ``/metrics`` answers only an unrestricted key; ``/v1/kb/{name}/rights`` answers for a knowledge base of the key's
  scope only;
  ``/v1/jobs/{id}`` answers only for a job of a knowledge base the key may use);
* ``read`` / ``write`` on the knowledge base ``{name}`` of the path (kbgraph.serve.access.RIGHTS); a body that
  asks a read route to write needs ``write`` too, checked by the route with :func:`require` (``POST .../ask``
  with ``"save": true`` writes the rationale into the graph);
* ``tools``: the MCP endpoint, where each tool call is checked against the key (kbgraph.serve.mcp).

Without any key configured (loopback only: kbgraph.serve.guard.check_bind) every right is granted.

A key scoped to documents (``KeyScope.where``, issue 58) may use a ``read`` route only if the route is in
:data:`DOCUMENT_SCOPED`, the routes that open their knowledge base through kbgraph.serve.scoping (every read inside
the key's documents); any other ``read`` or ``write`` route is refused to it (fail closed), so a route added later
leaks nothing until it applies the scope and is named there.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Literal

from fastapi import Request
from starlette.routing import BaseRoute

from kbgraph.serve.access import SCOPE_KEY, Forbidden, KeyScope
from kbgraph.serve.kbs import check_name

Right = Literal["open", "key", "read", "write", "tools"]

#: (method, route path) -> the right it needs. Every route the application has is named here.
ROUTE_RIGHTS: dict[tuple[str, str], Right] = {
    ("GET", "/healthz"): "open",
    ("GET", "/readyz"): "key",
    ("GET", "/metrics"): "key",  # and unrestricted, checked by the route (kbgraph.serve.metrics)
    ("GET", "/openapi.json"): "key",
    ("GET", "/docs"): "key",
    ("GET", "/docs/oauth2-redirect"): "key",
    ("GET", "/redoc"): "key",
    ("HEAD", "/openapi.json"): "key",
    ("HEAD", "/docs"): "key",
    ("HEAD", "/docs/oauth2-redirect"): "key",
    ("HEAD", "/redoc"): "key",
    ("POST", "/v1/kb/{name}/ask"): "read",
    ("POST", "/v1/kb/{name}/search"): "read",
    ("POST", "/v1/kb/{name}/ingest"): "write",
    ("GET", "/v1/jobs/{job_id}"): "key",
    ("GET", "/v1/kb/{name}/documents"): "read",
    ("DELETE", "/v1/kb/{name}/documents/{document}"): "write",
    ("GET", "/v1/kb/{name}/chunks/{chunk_id}"): "read",
    ("GET", "/v1/kb/{name}/chunks/{chunk_id}/page.png"): "read",
    ("GET", "/v1/kb/{name}/stats"): "read",
    ("GET", "/v1/kb/{name}/browse/{query}"): "read",
    # the web app's Explore and Runs routes (kbgraph.serve.explore)
    ("GET", "/v1/kb/{name}/rights"): "key",  # and the knowledge base in the key's scope, checked by the route
    ("GET", "/v1/kb/{name}/explore/search"): "read",
    ("GET", "/v1/kb/{name}/explore/nodes/{node_id}"): "read",
    ("GET", "/v1/kb/{name}/explore/views/{view}"): "read",
    ("GET", "/v1/kb/{name}/runs"): "read",
    ("*", "/mcp"): "tools",  # every method reaches the MCP transport (GET stream, POST messages, DELETE session)
}


#: The ``read`` routes that apply a document-scoped key's filter to every read (kbgraph.serve.scoping): the only
#: ``read`` routes such a key may use.
DOCUMENT_SCOPED: set[tuple[str, str]] = {
    ("POST", "/v1/kb/{name}/ask"),
    ("POST", "/v1/kb/{name}/search"),
    ("GET", "/v1/kb/{name}/documents"),
    ("GET", "/v1/kb/{name}/chunks/{chunk_id}"),
    ("GET", "/v1/kb/{name}/chunks/{chunk_id}/page.png"),
    ("GET", "/v1/kb/{name}/stats"),
    ("GET", "/v1/kb/{name}/browse/{query}"),
    ("GET", "/v1/kb/{name}/explore/search"),
    ("GET", "/v1/kb/{name}/explore/nodes/{node_id}"),
    ("GET", "/v1/kb/{name}/explore/views/{view}"),
    ("GET", "/v1/kb/{name}/runs"),
}


def route_path(route: BaseRoute) -> str:
    """A route's path as :data:`ROUTE_RIGHTS` names it (``{document:path}`` -> ``{document}``)."""
    path = str(getattr(route, "path", ""))
    return path.replace(":path}", "}")


def right_of(method: str, path: str) -> Right | None:
    """The right ``method`` on the route ``path`` needs, or None for a route the table does not name."""
    return ROUTE_RIGHTS.get((method.upper(), path), ROUTE_RIGHTS.get(("*", path)))


def app_routes(routes: Iterable[BaseRoute]) -> Iterator[tuple[str, str]]:
    """``(method, path)`` of every route of an application, routers included by ``include_router`` walked
    (``*``: a route that takes every method, e.g. a mounted ASGI app)."""
    for route in routes:
        inner = getattr(route, "original_router", None) or getattr(route, "router", None)
        if inner is not None and not hasattr(route, "path"):
            yield from app_routes(inner.routes)
            continue
        methods = getattr(route, "methods", None)
        for method in sorted(methods) if methods else ["*"]:
            yield method, route_path(route)


def key_of(request: Request) -> KeyScope | None:
    """The request's API key scope (None when the server has no keys: everything is allowed)."""
    return request.scope.get(SCOPE_KEY)


def require(request: Request, name: str, right: str, why: str) -> None:
    """Raise Forbidden unless the request's key has ``right`` on knowledge base ``name``, its message beginning
    with ``why`` (what in the request needs it); nothing without keys configured."""
    key = key_of(request)
    if key is None:
        return
    try:
        key.check(check_name(name), right)
    except Forbidden as exc:
        raise Forbidden(f"{why} and needs the {right!r} right: {exc}") from None


async def authorize(request: Request) -> None:
    """The dependency of every ``/v1`` route: the right :data:`ROUTE_RIGHTS` names for the matched route, checked
    against the request's key on the decoded ``{name}``. Raises InvalidName (400) for a name that is not a plain
    name, Forbidden (403) for a knowledge base or right outside the key's scope or for a route the table does
    not name, or for a route that does not apply the document scope of a key that has one (:data:`DOCUMENT_SCOPED`).
    A coroutine because it never blocks (a few dictionary lookups): FastAPI runs a plain function
    dependency in its thread pool, a round trip to another thread on every request."""
    route = request.scope.get("route")
    path = route_path(route) if route is not None else request.url.path
    right = right_of(request.method, path) if route is not None else None
    if right is None:
        raise Forbidden(
            f"{request.method} {path} has no entry in the rights table (kbgraph.serve.authz.ROUTE_RIGHTS): refused"
        )
    name = request.path_params.get("name")
    if name is not None:
        check_name(name)
    key = key_of(request)
    if key is None or right in ("open", "key", "tools"):
        return
    if name is None:
        raise Forbidden(f"{request.method} {path} needs {right!r} on a knowledge base but names none")
    key.check(name, right)
    if key.where is not None and (request.method, path) not in DOCUMENT_SCOPED:
        raise Forbidden(
            f"the API key {key.name!r} is scoped to documents ({key.describe_where()}) and "
            f"{request.method} {path} does not apply a document scope: refused"
        )
