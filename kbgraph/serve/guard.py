"""The guard in front of every route of ``kbgraph serve`` (security), as pure ASGI middleware so
that it covers the MCP endpoint ``/mcp`` as well as the FastAPI routes:

1. with API keys (``KBGRAPH_API_KEY``, ``KBGRAPH_API_KEYS_FILE``: kbgraph.serve.access), every request but
   ``GET /healthz`` carries ``Authorization: Bearer <key>``, compared in constant time, else 401 (no key, an
   unknown or a revoked one); the key's scope is kept in the ASGI scope (``scope["kbgraph.key"]``, a
   :class:`~kbgraph.serve.access.KeyScope`) for the routes and the MCP tools;
2. the knowledge-base segment of ``/v1/kb/{name}/...`` is checked on the raw, still percent-encoded path, so
   ``..%2Fx``, ``%2Fetc``, ``%00`` and an empty or over-long name are a 400 before any route, file or
   connection (the router would decode ``..%2Fx`` into a path that matches no route: a 404, not a 400); then
   the key's scope: a knowledge base outside it, or ``POST .../ingest`` / ``DELETE`` (the ``write`` right)
   with a key without ``write``, or any other call without ``read``, is a 403;
3. a request body over ``max_bytes`` is a 413 (Content-Length checked first; a chunked body is counted as it
   arrives, at most ``max_bytes`` held in memory);
4. an upload (``multipart/form-data`` to ``POST /v1/kb/{name}/ingest``, kbgraph.serve.uploads) has the limit
   ``max_upload_bytes`` instead and is not held in memory: its Content-Length is checked first, then the body
   is counted as the route reads it, and the read that passes the limit ends the request with a 413 (the
   route has written nothing yet: it saves the files only once the whole body arrived).

:func:`check_bind` refuses to start off loopback without a key (or a keys file).
"""

from __future__ import annotations

import ipaddress
import json
from urllib.parse import unquote_to_bytes

from kbgraph.errors import ConfigError
from kbgraph.serve.access import Forbidden, KeyRing
from kbgraph.serve.kbs import InvalidName, check_name

KB_PREFIX = b"/v1/kb/"
OPEN_PATHS = frozenset({"/healthz"})
#: Where the Guard leaves the request's KeyScope in the ASGI scope (None: no keys configured).
SCOPE_KEY = "kbgraph.key"


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


class BodyTooLarge(Exception):
    """Raised by the counting ``receive`` of an upload once the body passes the limit (caught by the Guard)."""


class Guard:
    """ASGI middleware: ``Guard(app, api_key=..., keys=..., max_bytes=..., max_upload_bytes=...)``: ``keys`` the
    KeyRing (default: ``api_key`` alone; neither = no authentication); ``max_upload_bytes`` None = ``max_bytes``."""

    def __init__(self, app, *, api_key: str | None = None, keys: KeyRing | None = None, max_bytes: int = 1_048_576,
                 max_upload_bytes: int | None = None):  # fmt: skip
        self.app = app
        self.keys = keys if keys is not None else KeyRing(master=api_key or None)
        self.max_bytes = max_bytes
        self.max_upload_bytes = max_upload_bytes if max_upload_bytes is not None else max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        key = None
        if self.keys.enabled and scope.get("path") not in OPEN_PATHS:
            try:
                key = self.keys.authenticate(_bearer(scope))
            except ConfigError as exc:  # a malformed keys file: nobody gets in until it is fixed
                return await _reply(send, 500, str(exc))
            if key is None:
                return await _reply(send, 401, "missing, unknown or revoked API key: send `Authorization: Bearer "
                                    "<key>` with a key of KBGRAPH_API_KEY or KBGRAPH_API_KEYS_FILE",
                                    {b"www-authenticate": b"Bearer"})  # fmt: skip
        scope[SCOPE_KEY] = key
        raw = scope.get("raw_path") or scope.get("path", "").encode("utf-8")
        if raw.startswith(KB_PREFIX):
            rest = raw[len(KB_PREFIX):].split(b"?", 1)[0].split(b"/")
            try:
                name = check_name(unquote_to_bytes(rest[0]).decode("utf-8", "replace"))
            except InvalidName as exc:
                return await _reply(send, 400, str(exc))
            if key is not None:
                method = scope.get("method")
                write = method == "DELETE" or (method == "POST" and rest[1:] == [b"ingest"])
                try:
                    key.check(name, "write" if write else "read")
                except Forbidden as exc:
                    return await _reply(send, 403, str(exc))
        declared = _content_length(scope)
        if _is_upload(scope, raw):
            return await self._upload(scope, receive, send, declared)
        if declared is not None and declared > self.max_bytes:
            return await _reply(send, 413, self._too_large())
        if declared is None and scope.get("method") in ("POST", "PUT", "PATCH"):
            body = await self._read_body(receive)
            if body is None:
                return await _reply(send, 413, self._too_large())
            receive = _replay(body, receive)
        return await self.app(scope, receive, send)

    def _too_large(self, limit: int | None = None, setting: str = "KBGRAPH_MAX_REQUEST_BYTES") -> str:
        return f"the request body is larger than {limit or self.max_bytes:,} bytes ({setting})"

    async def _upload(self, scope, receive, send, declared: int | None):
        """Pass an upload on with its body counted as it is read (module doc, step 4)."""
        limit = self.max_upload_bytes
        if declared is not None and declared > limit:
            return await _reply(send, 413, self._too_large(limit, "KBGRAPH_MAX_UPLOAD_BYTES"))
        size, started = 0, False

        async def counted():
            nonlocal size
            message = await receive()
            if message["type"] == "http.request":
                size += len(message.get("body", b""))
                if size > limit:
                    raise BodyTooLarge
            return message

        async def watched(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            return await self.app(scope, counted, watched)
        except BodyTooLarge:
            if started:
                raise
            return await _reply(send, 413, self._too_large(limit, "KBGRAPH_MAX_UPLOAD_BYTES"))

    async def _read_body(self, receive) -> bytes | None:
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


def _bearer(scope) -> bytes | None:
    """The token of the request's ``Authorization: Bearer <token>`` header, or None."""
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, token = value.partition(b" ")
            return token.strip() if scheme.lower() == b"bearer" else None
    return None


def _is_upload(scope, raw: bytes) -> bool:
    """A ``multipart/form-data`` POST to ``/v1/kb/{name}/ingest``."""
    if scope.get("method") != "POST" or not raw.startswith(KB_PREFIX):
        return False
    rest = raw[len(KB_PREFIX):].split(b"?", 1)[0].split(b"/")
    if len(rest) != 2 or rest[1] != b"ingest":
        return False
    ctype = next((v for k, v in scope.get("headers", []) if k == b"content-type"), b"")
    return ctype.split(b";", 1)[0].strip().lower() == b"multipart/form-data"


def _content_length(scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _replay(body: bytes, receive):
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _reply(send, status: int, detail: str, headers: dict[bytes, bytes] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode("utf-8")
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += list((headers or {}).items())
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
