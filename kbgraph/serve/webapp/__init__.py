"""The web app of ``kbgraph serve`` (issue 57): plain HTML, CSS and JavaScript modules under ``static/`` (no build
step), with Cytoscape.js vendored from npm (``static/vendor/cytoscape/``: its version, licence and checksum in
``VERSION.json``; ``scripts/vendor_webapp.sh`` refreshes it). Everything it needs ships inside the package: no CDN,
no Node.js at install or run time. docs/ui.md shows its pages.

:class:`WebApp` is pure ASGI middleware placed **outside** the guard (kbgraph.serve.guard): the page must load before
the user has typed an API key, so its files are served without one. It answers ``GET``/``HEAD`` of ``/`` (the page)
and of ``/ui/...`` (its files, a fixed table read once at start: no path reaches the file system) and hands every
other request to the application, the guard first. What it serves is public code and two public tables (the method
registry, kbgraph.query.methods.registry, the Browser style's colours, kbgraph.neo4j_local.browser_style, and the
Explore page's views, the browse catalogue, in ``/ui/meta.json``), never data of a knowledge base: the page reads those through the ``/v1`` JSON API of its own
origin, with the key the user gives it (kept in the tab's sessionStorage, sent as ``Authorization: Bearer``), under
the guard and the rights table (kbgraph.serve.authz) like any other client.

It keeps the guard's Host check (DNS rebinding: 421 for a Host that is not loopback nor allowed) and sends a
Content-Security-Policy that allows scripts, styles, images and connections from its own origin only (images also
from ``blob:``, the object URLs of a PDF page the page fetched with its key), no inline script or style, no plugin, no framing (:data:`CSP`), with ``nosniff``, ``no-referrer`` and ``DENY`` framing beside
it. Files are revalidated by their ETag (``Cache-Control: no-cache``), so an upgrade of kbgraph is seen at once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from kbgraph.browse import CATALOGUE
from kbgraph.neo4j_local.browser_style import grass_path, parse_grass
from kbgraph.query.methods.registry import DEFAULT_ANSWER_METHOD, DEFAULT_RETRIEVAL_METHOD, METHODS
from kbgraph.serve.explore_views import VIEWS
from kbgraph.serve.guard import host_allowed

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["CSP", "PREFIX", "WebApp", "assets", "meta"]

#: Where the app's files are served (the page itself is ``/``).
PREFIX = "/ui/"
#: The Content-Security-Policy of every response of the app: its own origin only, no inline script or style.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
)
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".txt": "text/plain; charset=utf-8",
    "": "text/plain; charset=utf-8",
}
#: Node labels of the Browser style the app colours (kbgraph/resources/neo4j-browser/kbgraph.grass).
STYLE_KEYS = {"color": "color", "border-color": "border", "text-color-internal": "text"}


@dataclass(frozen=True)
class Asset:
    body: bytes
    content_type: str
    etag: bytes


def _asset(body: bytes, content_type: str) -> Asset:
    return Asset(body, content_type, b'"' + hashlib.sha256(body).hexdigest()[:32].encode() + b'"')


def _walk(folder: Traversable, prefix: str) -> Iterator[tuple[str, Traversable]]:
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.startswith((".", "__")):
            continue
        if entry.is_dir():
            yield from _walk(entry, f"{prefix}{entry.name}/")
        else:
            yield f"{prefix}{entry.name}", entry


def meta() -> dict[str, object]:
    """``/ui/meta.json``: the method registry (name, kind, whether it needs an LLM, its summary), the default
    methods, each node label's colours in the Browser style, and the Explore page's views (the browse queries of
    kbgraph.serve.explore_views.VIEWS: name, title, parameters with their defaults and help)."""
    style = parse_grass(grass_path().read_text(encoding="utf-8"))
    colours = {}
    for selector, props in style.items():
        if selector.startswith("node."):
            colours[selector[5:]] = {out: props[key] for key, out in STYLE_KEYS.items() if key in props}
    base = style.get("node", {})
    colours["*"] = {out: base[key] for key, out in STYLE_KEYS.items() if key in base}
    methods = [
        {"name": m.name, "kind": m.kind, "needs_llm": m.needs_llm, "summary": m.summary} for m in METHODS.values()
    ]
    views = [
        {
            "name": name,
            "title": CATALOGUE[name].title,
            "params": [p.model_dump(include={"name", "default", "help"}) for p in CATALOGUE[name].params],
        }
        for name in VIEWS
    ]
    return {
        "methods": methods,
        "default_methods": {"llm": DEFAULT_ANSWER_METHOD, "no_llm": DEFAULT_RETRIEVAL_METHOD},
        "style": colours,
        "views": views,
    }


def assets() -> dict[str, Asset]:
    """Request path -> file, read once: every file under ``static/`` at ``/ui/<path>``, ``index.html`` also at
    ``/``, and ``/ui/meta.json`` (:func:`meta`)."""
    root = files(__package__).joinpath("static")
    table: dict[str, Asset] = {}
    for rel, entry in _walk(root, ""):
        table[PREFIX + rel] = _asset(
            entry.read_bytes(), TYPES.get(PurePosixPath(rel).suffix, "application/octet-stream")
        )
    table["/"] = table[PREFIX + "index.html"]
    table[PREFIX + "meta.json"] = _asset(json.dumps(meta(), separators=(",", ":")).encode(), TYPES[".json"])
    return table


class WebApp:
    """ASGI middleware: ``WebApp(app, allowed_hosts=...)`` serves the web app (module doc) and passes every other
    request to ``app``. ``allowed_hosts`` as the guard's: None = no Host check (bound off loopback), else the hosts
    allowed besides loopback names."""

    def __init__(self, app: ASGIApp, *, allowed_hosts: Sequence[str] | None = ()):
        self.app = app
        self.allowed_hosts = None if allowed_hosts is None else tuple(allowed_hosts)
        self.assets = assets()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == "/" or path.startswith(PREFIX)):
            return await self.app(scope, receive, send)
        method = scope.get("method", "GET")
        headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
        host = headers.get("host", b"").decode("latin-1")
        if self.allowed_hosts is not None and not host_allowed(host, self.allowed_hosts):
            return await _send(
                send,
                421,
                b"this server answers only requests addressed to a loopback host (DNS "
                b"rebinding protection); see serve_allowed_hosts",
                "text/plain; charset=utf-8",
            )
        asset = self.assets.get(path)
        if method not in ("GET", "HEAD"):
            if path == "/":
                return await self.app(scope, receive, send)
            return await _send(
                send, 405, b"method not allowed", "text/plain; charset=utf-8", [(b"allow", b"GET, HEAD")]
            )
        if asset is None:
            return await _send(send, 404, b"not found", "text/plain; charset=utf-8")
        extra = [(b"etag", asset.etag), (b"cache-control", b"no-cache")]
        if asset.etag in [t.strip() for t in headers.get("if-none-match", b"").split(b",")]:
            return await _send(send, 304, b"", None, extra)
        return await _send(send, 200, asset.body, asset.content_type, extra, head=method == "HEAD")


async def _send(
    send: Send,
    status: int,
    body: bytes,
    content_type: str | None,
    headers: list[tuple[bytes, bytes]] | None = None,
    head: bool = False,
) -> None:
    """A whole response with the security headers; ``content_type`` None: a 304 (no body, no length)."""
    raw = (
        [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())] if content_type else []
    )
    raw += [*SECURITY_HEADERS, *(headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": b"" if head else body})
