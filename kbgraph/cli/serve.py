"""``kbgraph serve`` (the HTTP API with MCP at /mcp) and ``kbgraph mcp`` (MCP over stdio).

Registered on the ``kbgraph`` app by :func:`register`. Both need the ``serve`` extra; ``serve`` refuses to bind
off loopback without ``KBGRAPH_API_KEY`` or ``KBGRAPH_API_KEYS_FILE`` (exit 2). ``kbgraph serve keys add|list|
revoke`` manage the scoped keys of ``KBGRAPH_API_KEYS_FILE`` (kbgraph.serve.access; no extra needed)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from kbgraph.cli import common
from kbgraph.errors import ConfigError
from kbgraph.serve import build_mcp, create_app
from kbgraph.serve.access import add_key, load_keys, revoke_key
from kbgraph.serve.guard import check_bind
from kbgraph.settings import Settings
from kbgraph.store import backend_name
from kbgraph.serve.jobs import JobManager
from kbgraph.serve.kbs import KBPool


def _settings(**update: str | int | None) -> Settings:
    s = common.settings()
    return s.updated({k: v for k, v in update.items() if v is not None}) if update else s


def _need_extra() -> None:
    from importlib.util import find_spec

    missing = [name for name in ("fastapi", "uvicorn", "mcp", "prometheus_client") if find_spec(name) is None]
    if missing:
        raise ConfigError(f'{", ".join(missing)} not installed: pip install -e ".[serve]"')


serve_app = typer.Typer(
    invoke_without_command=True,
    help="Serve the HTTP API (OpenAPI at /docs) and the MCP tools "
    "at /mcp; knowledge base per request (/v1/kb/NAME). `serve keys`: the scoped API keys.",
)
keys_app = typer.Typer(no_args_is_help=True, help="Scoped API keys of `kbgraph serve` (KBGRAPH_API_KEYS_FILE).")
serve_app.add_typer(keys_app, name="keys")


@serve_app.callback()
def serve_cmd(
    ctx: typer.Context,
    host: str | None = typer.Option(
        None,
        "--host",
        help="Address to bind (KBGRAPH_SERVE_HOST; default 127.0.0.1; "
        "any other needs KBGRAPH_API_KEY or KBGRAPH_API_KEYS_FILE).",
    ),
    port: int | None = typer.Option(None, "--port", help="Port (KBGRAPH_SERVE_PORT; default 8080)."),
    open_app: bool = typer.Option(False, "--open", help="Open the web app (/) in the browser once the server is up."),
) -> None:
    """Serve the HTTP API (OpenAPI at /docs) and the MCP tools at /mcp; knowledge base per request (/v1/kb/NAME)."""
    if ctx.invoked_subcommand is not None:
        return

    _need_extra()
    s = _settings(serve_host=host, serve_port=port)
    check_bind(
        s.serve.serve_host, s.serve.api_key.get_secret_value() if s.serve.api_key else None, s.serve.api_keys_file
    )
    import uvicorn

    where = f"[{s.serve.serve_host}]" if ":" in s.serve.serve_host else s.serve.serve_host
    sys.stderr.write(
        f"kbgraph serve: http://{where}:{s.serve.serve_port}/docs (MCP at /mcp; default knowledge base "
        f"{s.name!r} on {backend_name(s)})\n"
    )
    server = uvicorn.Server(
        uvicorn.Config(create_app(s), host=s.serve.serve_host, port=s.serve.serve_port, log_level="info")
    )
    if open_app:
        import webbrowser

        url = app_url(s.serve.serve_host, s.serve.serve_port)
        threading.Thread(
            target=open_when_up, args=(server, url, webbrowser.open), name="kbgraph-open", daemon=True
        ).start()
    server.run()


def app_url(host: str, port: int) -> str:
    """The web app's address for a server bound to ``host``: a wildcard bind (0.0.0.0, ::) is opened on loopback."""
    host = host.strip("[]")
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def open_when_up(server: Any, url: str, opener: Callable[[str], object], timeout: float = 120.0) -> None:
    """Call ``opener(url)`` once the uvicorn ``server`` has started (its socket bound); nothing when it stops or
    does not start within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not server.started:
        if server.should_exit or time.monotonic() > deadline:
            return
        time.sleep(0.05)
    sys.stderr.write(f"kbgraph serve: opening {url} in the browser\n")
    opener(url)


def _keys_file() -> Path:
    path = common.settings().serve.api_keys_file
    if path is None:
        raise ConfigError(
            "no keys file: set KBGRAPH_API_KEYS_FILE (e.g. ~/.kbgraph/api-keys.toml; .json for JSON) "
            "for `kbgraph serve` and for `kbgraph serve keys`"
        )
    return path


@keys_app.command("add")
def keys_add_cmd(
    kb: list[str] = typer.Option(
        ..., "--kb", help="Knowledge base the key may use: a name or a glob such as 'team-a-*' ('*' = all); repeatable."
    ),
    rights: str = typer.Option(
        "read",
        "--rights",
        help="read (ask, search, browse, chunks, documents, stats), write (ingest, delete) or read,write.",
    ),
    name: str | None = typer.Option(None, "--name", help="A name for the key (list, revoke); default key-<random>."),
    where: list[str] | None = typer.Option(
        None,
        "--where",
        "-w",
        help="Scope the key to the documents whose metadata meet this condition (repeatable, all required; the "
        "syntax of `kbgraph ask --where`, docs/filters.md): every read it makes sees only those documents. Such a "
        "key may only read.",
    ),
) -> None:
    """Make a key with that scope and store its sha256 in KBGRAPH_API_KEYS_FILE; prints the key once (it is not
    kept anywhere: give it to its user now). With --where the key reads only the documents the conditions allow
    (stored with the key as the filter's JSON)."""
    path = _keys_file()
    key, scope = add_key(path, kbs=kb, rights=rights.split(","), name=name, where=where or None)
    scoped = f"; documents {scope.describe_where()}" if scope.where is not None else ""
    sys.stderr.write(
        f"key {scope.name!r}: knowledge bases {', '.join(scope.kbs)}; rights "
        f"{','.join(sorted(scope.rights))}{scoped}; its hash is in {path}. The key (shown once):\n"
    )
    sys.stdout.write(key + "\n")


@keys_app.command("list")
def keys_list_cmd() -> None:
    """The keys of KBGRAPH_API_KEYS_FILE: name, knowledge bases, rights, documents (a --where scope), hash prefix,
    created, revoked (never the keys: only their hashes are kept)."""
    path = _keys_file()
    keys = load_keys(path)
    if not keys:
        sys.stdout.write(f"no keys in {path}: kbgraph serve keys add --kb NAME --rights read\n")
    for k in keys:
        state = f"revoked {k.revoked}" if k.revoked else "active"
        documents = f"\twhere={k.describe_where()}" if k.where is not None else ""
        sys.stdout.write(
            f"{k.name}\tkb={','.join(k.kbs)}\trights={','.join(sorted(k.rights))}{documents}\t"
            f"sha256={k.sha256[:12]}…\tcreated={k.created or '-'}\t{state}\n"
        )


@keys_app.command("revoke")
def keys_revoke_cmd(name: str = typer.Argument(..., help="The key's name (kbgraph serve keys list).")) -> None:
    """Revoke a key: from the next request on it is refused (401); a running server reads the file again when it
    changes."""
    scope = revoke_key(_keys_file(), name)
    sys.stderr.write(f"key {scope.name!r} revoked at {scope.revoked}\n")


def mcp_cmd() -> None:
    """Serve the MCP tools over stdio (register `kbgraph mcp` in an MCP client; --kb picks the default knowledge
    base)."""
    _need_extra()
    pool = KBPool(_settings())
    try:
        build_mcp(pool, JobManager(pool)).run("stdio")
    finally:
        pool.close()


def register(app: typer.Typer) -> None:
    """Add ``serve`` (with ``serve keys``) and ``mcp`` to the ``kbgraph`` command."""
    app.add_typer(serve_app, name="serve")
    app.command("mcp")(mcp_cmd)
