"""``kbgraph serve`` (the HTTP API with MCP at /mcp) and ``kbgraph mcp`` (MCP over stdio): issue 16 §1-§2.

Registered on the ``kbgraph`` app by :func:`register`. Both need the ``serve`` extra; ``serve`` refuses to bind
off loopback without ``KBGRAPH_API_KEY`` (exit 2)."""

from __future__ import annotations

import sys

import typer

from kbgraph.cli import common


def _settings(**update):
    s = common.settings()
    return s.model_copy(update={k: v for k, v in update.items() if v is not None}) if update else s


def _need_extra() -> None:
    from importlib.util import find_spec

    missing = [name for name in ("fastapi", "uvicorn", "mcp") if find_spec(name) is None]
    if missing:
        from kbgraph.errors import ConfigError

        raise ConfigError(f"{', '.join(missing)} not installed: pip install -e \".[serve]\"")


def serve_cmd(
    host: str | None = typer.Option(None, "--host", help="Address to bind (KBGRAPH_SERVE_HOST; default 127.0.0.1; "
                                    "any other needs KBGRAPH_API_KEY)."),
    port: int | None = typer.Option(None, "--port", help="Port (KBGRAPH_SERVE_PORT; default 8080)."),
) -> None:
    """Serve the HTTP API (OpenAPI at /docs) and the MCP tools at /mcp; knowledge base per request (/v1/kb/NAME)."""
    from kbgraph.serve.guard import check_bind

    _need_extra()
    s = _settings(serve_host=host, serve_port=port)
    check_bind(s.serve_host, s.api_key.get_secret_value() if s.api_key else None)
    import uvicorn

    from kbgraph.serve.app import create_app

    where = f"[{s.serve_host}]" if ":" in s.serve_host else s.serve_host
    sys.stderr.write(f"kbgraph serve: http://{where}:{s.serve_port}/docs (MCP at /mcp; default knowledge base "
                     f"{s.name!r} on {s.backend})\n")  # fmt: skip
    uvicorn.run(create_app(s), host=s.serve_host, port=s.serve_port, log_level="info")


def mcp_cmd() -> None:
    """Serve the MCP tools over stdio (register `kbgraph mcp` in an MCP client; --kb picks the default knowledge
    base)."""
    _need_extra()
    from kbgraph.serve.jobs import JobManager
    from kbgraph.serve.kbs import KBPool
    from kbgraph.serve.mcp import build_mcp

    pool = KBPool(_settings())
    try:
        build_mcp(pool, JobManager(pool)).run("stdio")
    finally:
        pool.close()


def register(app: typer.Typer) -> None:
    """Add ``serve`` and ``mcp`` to the ``kbgraph`` command."""
    app.command("serve")(serve_cmd)
    app.command("mcp")(mcp_cmd)
