"""Who may do what on ``kbgraph serve``: the folders ingestion may read and the scoped API keys.

**Ingest roots** (setting ``serve_ingest_roots``, ``KBGRAPH_SERVE_INGEST_ROOTS``): a path given to
``POST /v1/kb/{name}/ingest {"paths": [...]}`` or to the MCP tool ``ingest`` is resolved (symbolic links and
``..``) and must lie inside one of the roots (also resolved), else :class:`Forbidden` (HTTP 403) naming the
setting, before the job is queued, so nothing is read. No roots = path ingestion off (uploads still work, they
are kept under the server's own ``<home>/<kb>/uploads``). A folder inside a root is walked with the roots as a
fence: a symbolic link in it that leads outside every root is a skipped file of the report, never read
(``KnowledgeBase.ingest(within=...)``). The CLI is not limited.

**Scoped keys** (``KBGRAPH_API_KEYS_FILE``, TOML or JSON by its suffix; ``kbgraph serve keys add|list|revoke``
manage it)::

    [[keys]]
    name = "team-a-agents"
    sha256 = "9f86d0…"            # sha256 hex of the key; the key itself is never stored
    kbs = ["team-a", "team-a-*"]  # names or fnmatch globs
    rights = ["read"]             # read: ask, search, browse, chunks, documents, stats; write: ingest, delete
    where = '{"op": "prefix", "key": "folder", "value": "engineering/"}'  # optional: the documents it may read
    created = "2026-11-26T08:00:00Z"
    revoked = "2026-11-27T09:00:00Z"   # present once revoked: the key opens nothing

A request without a key, or with a key that is unknown or revoked, is a 401; a knowledge base or a right outside
the key's scope is a 403 (:class:`Forbidden`).

**Document-scoped keys** (issue 58; ``kbgraph serve keys add --where 'folder^=engineering/'``): ``where`` holds a
document filter (kbgraph.filters, as its JSON): every read of the key sees only the documents it allows
(kbgraph.serve.scoping), and such a key is read-only (``write`` is refused when the key is made and when it is
used: a write cannot be held to documents that do not exist yet). ``KBGRAPH_API_KEY`` stays one key with every right on every
knowledge base. The file is read again when it changes (mtime or size), so a revocation applies to the next
request without a restart.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import json
import os
import secrets
import threading
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kbgraph.errors import ConfigError, KBGraphError, QueryError
from kbgraph.filters import Filter, describe, parse_filter, parse_where
from kbgraph.text import utc_now

#: Rights a key may hold; ``read`` covers ask/search/browse/get_chunk/list/stats, ``write`` ingest/delete.
RIGHTS = ("read", "write")
KEY_PREFIX = "kbg_"
#: Where the guard (kbgraph.serve.guard) leaves the request's KeyScope in the ASGI scope (None: no keys configured).
SCOPE_KEY = "kbgraph.key"


class Forbidden(KBGraphError):
    """A request outside what the server allows (HTTP 403): a path outside ``serve_ingest_roots``, a knowledge
    base or right outside the API key's scope. The message names the setting or the scope."""

    exit_code = 2


# --- ingest roots ---------------------------------------------------------------------------------------------
def resolved_roots(roots: Iterable[Path | str]) -> list[Path]:
    """The roots, ``~`` expanded and resolved (symbolic links, ``..``)."""
    return [Path(r).expanduser().resolve() for r in roots]


def inside(path: Path, roots: Sequence[Path]) -> bool:
    """True when ``path`` (already resolved) is one of ``roots`` or under one."""
    return any(path == root or path.is_relative_to(root) for root in roots)


def check_ingest_paths(paths: Iterable[str | Path], roots: Iterable[Path | str]) -> list[str]:
    """``paths`` resolved (symbolic links followed, ``..`` removed), each inside one of ``roots`` (resolved too).
    Raises Forbidden naming ``serve_ingest_roots`` for the first path outside every root, or for any path when
    there are no roots (path ingestion off). Nothing is opened or read: only the path names are resolved."""
    fence = resolved_roots(roots)
    names = [str(p) for p in paths]
    if not fence:
        raise Forbidden(
            "ingesting server paths is off: set serve_ingest_roots (KBGRAPH_SERVE_INGEST_ROOTS, comma-separated "
            "folders) to the folders the server may read, or upload the files (multipart `files` parts)"
        )
    out: list[str] = []
    for raw in names:
        if "\x00" in raw:
            raise Forbidden("a path with a NUL character is outside serve_ingest_roots")
        target = Path(raw).expanduser().resolve()
        if not inside(target, fence):
            shown = raw.encode("unicode_escape").decode("ascii")[:200]
            raise Forbidden(
                f"{shown!r} is outside serve_ingest_roots ({', '.join(str(r) for r in fence)}): give a path "
                "under one of them (symbolic links and '..' are resolved first), or add its folder to "
                "serve_ingest_roots (KBGRAPH_SERVE_INGEST_ROOTS)"
            )
        out.append(str(target))
    return out


# --- scoped keys ----------------------------------------------------------------------------------------------
def key_hash(key: str) -> str:
    """The sha256 hex digest stored for ``key``."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class KeyScope:
    """One API key's scope: ``name``, ``kbs`` (names or fnmatch globs; ``*`` = all), ``rights`` (subset of
    RIGHTS), ``where``: the documents it may read, a filter's JSON (kbgraph.filters; None: every document).
    ``sha256``: the key's hash (empty for ``KBGRAPH_API_KEY``)."""

    name: str
    kbs: tuple[str, ...] = ("*",)
    rights: frozenset[str] = frozenset(RIGHTS)
    sha256: str = ""
    created: str | None = None
    revoked: str | None = None
    where: str | None = None

    @property
    def documents(self) -> Filter | None:
        """The key's document filter (None: every document). Raises ConfigError for a ``where`` that is no filter
        (checked when the keys file is read, so a stored key always has a valid one)."""
        if self.where is None:
            return None
        try:
            return parse_filter(self.where)
        except QueryError as exc:
            raise ConfigError(f"key {self.name!r}: its `where` is not a document filter: {exc}") from None

    @property
    def identity(self) -> str:
        """What tells this key from every other (the owner of its jobs): its hash, or its name for
        KBGRAPH_API_KEY."""
        return self.sha256 or self.name

    def allows_kb(self, kb: str) -> bool:
        return any(fnmatch.fnmatchcase(kb, pattern) for pattern in self.kbs)

    def check(self, kb: str, right: str) -> None:
        """Raise Forbidden unless this key may use ``right`` on knowledge base ``kb``."""
        if not self.allows_kb(kb):
            raise Forbidden(
                f"the API key {self.name!r} may not use knowledge base {kb!r} (its scope: {', '.join(self.kbs)}); "
                "use a key for that knowledge base (kbgraph serve keys add --kb NAME)"
            )
        if right == "write" and self.where is not None:
            raise Forbidden(
                f"the API key {self.name!r} is scoped to documents ({self.describe_where()}) and may only read: "
                "ingest and delete need a key without --where"
            )
        if right not in self.rights:
            raise Forbidden(
                f"the API key {self.name!r} has no {right!r} right (its rights: {', '.join(sorted(self.rights))}); "
                f"use a key with it (kbgraph serve keys add --kb {kb} --rights {right})"
            )

    def describe_where(self) -> str:
        """The key's document filter as ``--where`` text ('every document' without one)."""
        filt = self.documents
        return "every document" if filt is None else describe(filt)


#: The scope of KBGRAPH_API_KEY: every knowledge base, every right.
MASTER = KeyScope(name="KBGRAPH_API_KEY")


def unrestricted(key: KeyScope | None) -> bool:
    """True for no keys configured, ``KBGRAPH_API_KEY`` or a key with every right on every knowledge base and every
    document (no ``where``)."""
    return key is None or key is MASTER or (key.kbs == ("*",) and key.rights >= MASTER.rights and key.where is None)


def _parse_rights(rights: Iterable[str]) -> frozenset[str]:
    out = frozenset(r.strip().lower() for r in rights if r.strip())
    bad = sorted(out - set(RIGHTS))
    if bad or not out:
        raise ConfigError(
            f"unknown right {bad[0]!r}: use read, write or read,write"
            if bad
            else "a key needs at least one right: read, write or read,write"
        )
    return out


def load_keys(path: Path) -> list[KeyScope]:
    """The keys of the file at ``path`` (TOML, or JSON when it ends in .json): ``{"keys": [{name, sha256, kbs,
    rights, created, where?, revoked?}, ...]}``; a missing file holds none. Raises ConfigError naming the file for a
    malformed one."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ConfigError(f"cannot read the API keys file {path} (KBGRAPH_API_KEYS_FILE): {exc.strerror}") from exc
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
        out = []
        for entry in data.get("keys", []):
            digest = str(entry["sha256"]).lower()
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                raise ValueError(f"key {entry.get('name')!r}: sha256 is not 64 hex digits")
            kbs = entry.get("kbs", [])
            kbs = [kbs] if isinstance(kbs, str) else list(kbs)
            where = entry.get("where")
            scope = KeyScope(
                name=str(entry["name"]),
                kbs=tuple(str(k) for k in kbs),
                sha256=digest,
                rights=_parse_rights(entry.get("rights", [])),
                created=entry.get("created"),
                revoked=entry.get("revoked"),
                where=None if where is None else str(where),
            )
            scope.documents  # noqa: B018 - a `where` that is no filter makes the file malformed
            out.append(scope)
        return out
    except (ValueError, KeyError, TypeError, AttributeError, ConfigError) as exc:
        raise ConfigError(
            f"malformed API keys file {path} (KBGRAPH_API_KEYS_FILE): {exc}; manage it with "
            "`kbgraph serve keys add|list|revoke`"
        ) from exc


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=True)  # a JSON string with ASCII escapes is a TOML basic string


def _dump(keys: Sequence[KeyScope], path: Path) -> str:
    rows = [
        {
            "name": k.name,
            "sha256": k.sha256,
            "kbs": list(k.kbs),
            "rights": sorted(k.rights),
            "created": k.created,
            **({"where": k.where} if k.where is not None else {}),
            **({"revoked": k.revoked} if k.revoked else {}),
        }
        for k in keys
    ]
    if path.suffix.lower() == ".json":
        return json.dumps({"keys": [{k: v for k, v in r.items() if v is not None} for r in rows]}, indent=2) + "\n"
    lines = ["# kbgraph serve API keys (KBGRAPH_API_KEYS_FILE): hashes only; manage with `kbgraph serve keys`", ""]
    for row in rows:
        lines.append("[[keys]]")
        for key, value in row.items():
            if value is None:
                continue
            shown = (
                "[" + ", ".join(_toml_string(v) for v in value) + "]"
                if isinstance(value, list)
                else _toml_string(value)
            )
            lines.append(f"{key} = {shown}")
        lines.append("")
    return "\n".join(lines)


def save_keys(keys: Sequence[KeyScope], path: Path) -> None:
    """Write ``keys`` to ``path`` atomically, readable by its owner only (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(_dump(keys, path))
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def add_key(
    path: Path,
    *,
    kbs: Sequence[str],
    rights: Iterable[str],
    name: str | None = None,
    where: Sequence[str] | Filter | None = None,
) -> tuple[str, KeyScope]:
    """Make a new key with that scope, store its hash in ``path``; returns ``(key, scope)`` — the only time the
    key is seen. ``where``: the documents the key may read, as ``--where`` conditions (all required;
    kbgraph.filters.parse_where) or a filter; such a key is read-only. Raises ConfigError for an empty scope, an
    unknown right, a name already in the file, a condition that is not one, or ``write`` with ``where``."""
    kbs = [k.strip() for k in kbs if k.strip()]
    if not kbs:
        raise ConfigError("a key needs at least one knowledge base: --kb NAME or --kb 'GLOB*' ('*' = all)")
    granted = _parse_rights(rights)
    filt = _where_filter(where)
    if filt is not None and "write" in granted:
        raise ConfigError(
            "a key scoped to documents (--where) may only read: give --rights read (ingest and "
            "delete need a key without --where)"
        )
    keys = load_keys(path)
    name = name or f"key-{secrets.token_hex(3)}"
    if any(k.name == name for k in keys):
        raise ConfigError(f"a key named {name!r} is already in {path}: choose another --name, or revoke it first")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    scope = KeyScope(
        name=name,
        kbs=tuple(kbs),
        rights=granted,
        sha256=key_hash(key),
        created=utc_now(),
        where=None if filt is None else filt.model_dump_json(exclude_none=True),
    )
    save_keys([*keys, scope], path)
    return key, scope


def _where_filter(where: Sequence[str] | Filter | None) -> Filter | None:
    """``where`` (``--where`` conditions or a filter) as one filter, None for none; ConfigError for a bad one."""
    if where is None or isinstance(where, (list, tuple)) and not where:
        return None
    try:
        return parse_where(list(where)) if isinstance(where, (list, tuple)) else parse_filter(where)
    except QueryError as exc:
        raise ConfigError(str(exc)) from None


def revoke_key(path: Path, name: str) -> KeyScope:
    """Mark the key ``name`` revoked (it opens nothing from the next request on). Raises ConfigError when there is
    no such key."""
    keys = load_keys(path)
    found = next((k for k in keys if k.name == name), None)
    if found is None:
        raise ConfigError(f"no key named {name!r} in {path}: see `kbgraph serve keys list`")
    if found.revoked:
        return found
    revoked = KeyScope(**{**found.__dict__, "revoked": utc_now()})
    save_keys([revoked if k is found else k for k in keys], path)
    return revoked


@dataclass
class KeyRing:
    """The keys a server accepts: ``master`` (KBGRAPH_API_KEY, every right) and the file ``path``
    (KBGRAPH_API_KEYS_FILE), read again when it changes. ``enabled``: any key is configured (else the server is
    open, on loopback only)."""

    master: str | None = None
    path: Path | None = None
    _keys: list[KeyScope] = field(default_factory=list)
    _stamp: tuple[int, int] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def enabled(self) -> bool:
        return bool(self.master) or self.path is not None

    def _current(self) -> list[KeyScope]:
        assert self.path is not None
        try:
            st = self.path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = (0, -1)
        with self._lock:
            if stamp != self._stamp:
                self._keys, self._stamp = load_keys(self.path), stamp
            return self._keys

    def authenticate(self, token: str | bytes | None) -> KeyScope | None:
        """The scope of ``token``, or None for no, an unknown or a revoked key (compared in constant time)."""
        if not token:
            return None
        raw = token if isinstance(token, bytes) else token.encode("utf-8")
        if self.master and hmac.compare_digest(raw, self.master.encode("utf-8")):
            return MASTER
        if self.path is None:
            return None
        digest = hashlib.sha256(raw).hexdigest()
        found = None
        for scope in self._current():
            if hmac.compare_digest(digest, scope.sha256):
                found = scope
        return None if found is None or found.revoked else found
