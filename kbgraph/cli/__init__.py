"""The ``kbgraph`` command: a thin layer over the library, one library call per verb.

Errors a user can fix print as one line naming the fix and exit non-zero (2 for configuration and usage,
including an empty or over-long question, 75 when another run holds the lock, 1 otherwise); ``--debug`` shows the
traceback.

A package of verb modules, each adding its verbs to the one Typer ``app`` of kbgraph.cli.common with
``register(app)``: ``kb_verbs`` (config, stats, ingest, browse, delete, reset), ``query`` (ask, eval),
``models``, ``servers`` (store, neo4j, llm), ``serve`` (serve, mcp), ``tags``, ``decomposer`` and ``rank``. A new verb: a function in
the module of its kind (or a new module) and one line in its ``register``. ``python -m kbgraph.cli`` runs
kbgraph/cli/__main__.py.

Each verb module imports what its verbs call at its top (``kbgraph.kb``, ``kbgraph.eval``, ...), so ``kbgraph
--help`` loads the library's modules, not the heavy libraries behind them: torch, spaCy, the store drivers and
the server (fastapi, uvicorn, mcp) are imported when a verb needs them (tests/unit/test_local_imports.py).
"""

from __future__ import annotations

from kbgraph.cli import decomposer, kb_verbs, models, query, rank, serve, servers, tags
from kbgraph.cli.common import State, app, err_console
from kbgraph.errors import ConfigError, KBGraphError, QueryError

for _verbs in (kb_verbs, models, query, servers, serve, tags, decomposer, rank):
    _verbs.register(app)

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script. Returns the exit code."""
    from pydantic import ValidationError

    try:
        app(args=argv, prog_name="kbgraph")
    except SystemExit as exc:  # click's standalone mode: usage errors, --help, normal exit
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KBGraphError as exc:
        if State.debug:
            raise
        err_console.print(f"[red]error:[/] {exc}", highlight=False, soft_wrap=True)
        return ConfigError.exit_code if isinstance(exc, QueryError) else exc.exit_code  # a bad question: usage
    except ValidationError as exc:
        if State.debug:
            raise
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "settings"
        err_console.print(f"[red]error:[/] invalid setting {where}: {first['msg']}", highlight=False, soft_wrap=True)
        return ConfigError.exit_code
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130
    except Exception as exc:
        if State.debug:
            raise
        err_console.print(f"[red]error:[/] {type(exc).__name__}: {exc} (run with --debug for details)", soft_wrap=True)
        return 1
    return 0
