"""The guard in front of every route of ``kbgraph serve`` (security), as pure ASGI middleware so
that it covers the MCP endpoint ``/mcp`` as well as the FastAPI routes. In order:

1. **Host** (DNS rebinding): bound to loopback, a request whose ``Host`` is not a loopback name (``127.0.0.1``,
   ``localhost``, ``[::1]``, any port) nor in ``serve_allowed_hosts`` is a 421, as ``/mcp``'s own check does;
2. **the path**: the router matches the decoded path, so the guard reads no right from the raw bytes; a path
   whose first segments (``/v1/kb/{name}/{verb}``) are empty, ``.`` or ``..`` once decoded (``/v1/kb/..%2Fx``,
   ``/v1//kb``) is a 400 before any route, file or connection;
3. **the key**: with API keys (``KBGRAPH_API_KEY``, ``KBGRAPH_API_KEYS_FILE``: kbgraph.serve.access), every
   request but ``GET /healthz`` carries ``Authorization: Bearer <key>``, compared in constant time, else 401; the
   key's scope is left in the ASGI scope (``scope[SCOPE_KEY]``) and checked **after routing**, on the decoded path
   parameters, by kbgraph.serve.authz (``/v1``) and by each MCP tool (kbgraph.serve.mcp). A malformed keys file
   lets nobody in (500) and tells the caller nothing about it: the server log names the file;
4. **cross-site writes**: a state-changing request (POST, PUT, PATCH, DELETE) with an ``Origin`` outside
   ``serve_allowed_origins`` (default: loopback origins, any port), or sent by a browser as ``Sec-Fetch-Site:
   cross-site`` without an allowed Origin, is a 403; a body to ``/v1`` must be ``application/json`` (or
   ``multipart/form-data`` for an upload to ``.../ingest``), else 415, so a browser's "simple" cross-site POST
   (``text/plain``) is never read as JSON;
5. a request body over ``max_bytes`` is a 413 (Content-Length checked first; a chunked body is counted as it
   arrives, at most ``max_bytes`` held in memory);
6. an upload (``multipart/form-data`` to ``POST /v1/kb/{name}/ingest``, kbgraph.serve.uploads) has the limit
   ``max_upload_bytes`` instead and is not held in memory: its Content-Length is checked first, then the body
   is counted as the route reads it, and the read that passes the limit ends the request with a 413 (the
   route has written nothing yet: it saves the files only once the whole body arrived).

:func:`check_bind` refuses to start off loopback without a key (or a keys file).
"""

from __future__ import annotations

import fnmatch
import ipaddress
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kbgraph.errors import ConfigError
from kbgraph.serve.access import SCOPE_KEY, KeyRing

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["SCOPE_KEY", "Guard", "check_bind", "is_loopback", "LOOPBACK_ORIGINS"]

log = logging.getLogger("kbgraph.serve")

OPEN_PATHS = frozenset({"/healthz"})
#: Methods that change state: the cross-site check applies to them.
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: The origins allowed by default (a page served from this machine, any port).
LOOPBACK_ORIGINS = (
    "http://127.0.0.1:*",
    "http://localhost:*",
    "http://[::1]:*",
    "https://127.0.0.1:*",
    "https://localhost:*",
    "https://[::1]:*",
)
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
#: Segments of the decoded path checked for being plain (``/v1/kb/{name}/{verb}``).
PLAIN_SEGMENTS = 4


def is_loopback(host: str) -> bool:
    """True for 'localhost' and loopback addresses (127.0.0.0/8, ::1)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, api_key: str | None, keys_file: object = None) -> None:
    """Raise ConfigError when ``host`` is not loopback and neither an API key nor a keys file is set: the
    service would answer anyone who can reach the address."""
    if not is_loopback(host) and not api_key and not keys_file:
        raise ConfigError(
            f"refusing to serve on {host}: off loopback every request must carry a key; set KBGRAPH_API_KEY "
            "or KBGRAPH_API_KEYS_FILE (kbgraph serve keys add; clients send `Authorization: Bearer <key>`) or "
            "bind 127.0.0.1"
        )


def _host_name(host: str) -> str:
    """The host of a ``Host`` header without its port (``[::1]:8080`` -> ``[::1]``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def host_allowed(host_header: str, allowed: Sequence[str]) -> bool:
    """True when the ``Host`` header names a loopback host (any port) or one of ``allowed`` (names or fnmatch
    globs, matched with and without the port)."""
    host, name = host_header.strip().lower(), _host_name(host_header)
    if name in LOOPBACK_HOSTS:
        return True
    return any(fnmatch.fnmatchcase(host, a.lower()) or fnmatch.fnmatchcase(name, a.lower()) for a in allowed)


def origin_allowed(origin: str, allowed: Sequence[str]) -> bool:
    """True when ``origin`` (scheme://host[:port]) is one of ``allowed``; ``:*`` in an entry stands for any port
    (and none)."""
    origin = origin.strip().lower().rstrip("/")
    for entry in allowed:
        entry = entry.strip().lower().rstrip("/")
        if entry.endswith(":*"):
            base = entry[:-2]
            if origin == base or (origin.startswith(base + ":") and origin[len(base) + 1 :].isdigit()):
                return True
        elif origin == entry:
            return True
    return False


def plain_path(path: str) -> bool:
    """False when one of the first :data:`PLAIN_SEGMENTS` segments of the decoded ``path`` is ``.`` or ``..``,
    or empty before the path's end (``//``); what follows them may be a document URI such as ``file:///x``."""
    segments = path.split("/")[1:]
    for i, segment in enumerate(segments[:PLAIN_SEGMENTS]):
        if segment in (".", "..") or (segment == "" and i < len(segments) - 1):
            return False
    return True


class BodyTooLarge(Exception):
    """Raised by the counting ``receive`` of an upload once the body passes the limit (caught by the Guard)."""


class Guard:
    """ASGI middleware: ``Guard(app, api_key=..., keys=..., max_bytes=..., max_upload_bytes=..., allowed_hosts=...,
    allowed_origins=...)``: ``keys`` the KeyRing (default: ``api_key`` alone; neither = no authentication);
    ``max_upload_bytes`` None = ``max_bytes``; ``allowed_hosts`` None = no Host check (bound off loopback), else
    the hosts besides loopback names; ``allowed_origins``: the origins of state-changing requests (module doc)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        api_key: str | None = None,
        keys: KeyRing | None = None,
        max_bytes: int = 1_048_576,
        max_upload_bytes: int | None = None,
        allowed_hosts: Sequence[str] | None = (),
        allowed_origins: Sequence[str] = LOOPBACK_ORIGINS,
    ):
        self.app = app
        self.keys = keys if keys is not None else KeyRing(master=api_key or None)
        self.max_bytes = max_bytes
        self.max_upload_bytes = max_upload_bytes if max_upload_bytes is not None else max_bytes
        self.allowed_hosts = None if allowed_hosts is None else tuple(allowed_hosts)
        self.allowed_origins = tuple(allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = _headers(scope)
        if self.allowed_hosts is not None and not host_allowed(headers.get("host", ""), self.allowed_hosts):
            return await _reply(
                send,
                421,
                "this server answers only requests addressed to a loopback host (DNS "
                "rebinding protection); add the host to serve_allowed_hosts "
                "(KBGRAPH_SERVE_ALLOWED_HOSTS) to serve it by that name",
            )
        path = scope.get("path", "")
        if not plain_path(path):
            return await _reply(
                send, 400, "the request path has an empty, '.' or '..' segment: send the plain path (/v1/kb/NAME/...)"
            )
        key = None
        if self.keys.enabled and path not in OPEN_PATHS:
            try:
                key = self.keys.authenticate(_bearer(scope))
            except ConfigError as exc:  # a malformed keys file: nobody gets in until it is fixed
                log.error("refusing every request: %s", exc)
                return await _reply(send, 500, "the server's API keys are misconfigured; its log says how to fix them")
            if key is None:
                return await _reply(
                    send,
                    401,
                    "missing, unknown or revoked API key: send `Authorization: Bearer "
                    "<key>` with a key of KBGRAPH_API_KEY or KBGRAPH_API_KEYS_FILE",
                    {b"www-authenticate": b"Bearer"},
                )
        scope[SCOPE_KEY] = key
        method = scope.get("method", "GET")
        if method in WRITES:
            refused = self._cross_site(headers)
            if refused:
                return await _reply(send, 403, refused)
        upload = _is_upload(method, path, headers)
        if method in ("POST", "PUT", "PATCH") and path.startswith("/v1/") and not upload:
            ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if ctype != "application/json" and not (ctype.startswith("application/") and ctype.endswith("+json")):
                return await _reply(
                    send,
                    415,
                    f"the body must be JSON: send Content-Type: application/json (got "
                    f"{ctype[:60]!r}; an upload to .../ingest is multipart/form-data)",
                )
        declared = _content_length(headers)
        if upload:
            return await self._upload(scope, receive, send, declared)
        if declared is not None and declared > self.max_bytes:
            return await _reply(send, 413, self._too_large())
        if declared is None and method in ("POST", "PUT", "PATCH"):
            body = await self._read_body(receive)
            if body is None:
                return await _reply(send, 413, self._too_large())
            receive = _replay(body, receive)
        return await self.app(scope, receive, send)

    def _cross_site(self, headers: dict[str, str]) -> str | None:
        """Why a state-changing request is refused as cross-site, or None (module doc, step 4)."""
        origin = headers.get("origin")
        if origin is not None:
            if origin_allowed(origin, self.allowed_origins):
                return None
            shown = origin.encode("unicode_escape").decode("ascii")[:100]
            return (
                f"cross-site request refused: Origin {shown!r} is not in serve_allowed_origins "
                "(KBGRAPH_SERVE_ALLOWED_ORIGINS); add it there to let pages of that origin write"
            )
        if headers.get("sec-fetch-site", "").lower() == "cross-site":
            return "cross-site request refused (Sec-Fetch-Site: cross-site without an allowed Origin)"
        return None

    def _too_large(self, limit: int | None = None, setting: str = "KBGRAPH_MAX_REQUEST_BYTES") -> str:
        return f"the request body is larger than {limit or self.max_bytes:,} bytes ({setting})"

    async def _upload(self, scope: Scope, receive: Receive, send: Send, declared: int | None) -> None:
        """Pass an upload on with its body counted as it is read (module doc, step 4)."""
        limit = self.max_upload_bytes
        if declared is not None and declared > limit:
            return await _reply(send, 413, self._too_large(limit, "KBGRAPH_MAX_UPLOAD_BYTES"))
        size, started = 0, False

        async def counted() -> Message:
            nonlocal size
            message = await receive()
            if message["type"] == "http.request":
                size += len(message.get("body", b""))
                if size > limit:
                    raise BodyTooLarge
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            return await self.app(scope, counted, watched)
        except BodyTooLarge:
            if started:
                raise
            return await _reply(send, 413, self._too_large(limit, "KBGRAPH_MAX_UPLOAD_BYTES"))

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The whole body, or None once it exceeds max_bytes."""
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(parts)
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return None
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts)


def _bearer(scope: Scope) -> bytes | None:
    """The token of the request's ``Authorization: Bearer <token>`` header, or None."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.partition(b" ")
            return token.strip() if scheme.lower() == b"bearer" else None
    return None


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name (latin-1 decoded; the first of repeated ones)."""
    out: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        out.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return out


def _is_upload(method: str, path: str, headers: dict[str, str]) -> bool:
    """A ``multipart/form-data`` POST to ``/v1/kb/{name}/ingest`` (the decoded path, as the router sees it)."""
    if method != "POST" or not path.startswith("/v1/kb/"):
        return False
    rest = path[len("/v1/kb/") :].split("/")
    if len(rest) != 2 or rest[1] != "ingest":
        return False
    return headers.get("content-type", "").split(";", 1)[0].strip().lower() == "multipart/form-data"


def _content_length(headers: dict[str, str]) -> int | None:
    try:
        return int(headers["content-length"])
    except (KeyError, ValueError):
        return None


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _reply(send: Send, status: int, detail: str, headers: dict[bytes, bytes] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode("utf-8")
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += list((headers or {}).items())
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
