"""What every verb module of the ``kbgraph`` command shares: the one Typer ``app`` they register on (kbgraph.cli
assembles it), the consoles, the global options (``State``) and the effective ``settings()``."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer
from rich.console import Console
from kbgraph.errors import KnowledgeBaseNotFound
from kbgraph.home import check_not_reserved
from kbgraph.settings import Settings
from kbgraph.store import knowledge_base_exists, store_class

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="kbgraph: a PIKE-RAG knowledge base on a graph database (embedded FalkorDB or Neo4j 5).",
)

# Not a terminal (cron, a pipe, a log file): no wrapping at 80 columns, so each result stays one line.
console = Console(soft_wrap=not sys.stdout.isatty())
err_console = Console(stderr=True, soft_wrap=not sys.stderr.isatty())


class State:
    """The global options of this run (``--kb``, ``--uri``, ``--home`` as settings overrides; ``--debug``)."""

    overrides: dict[str, Any] = {}
    debug: bool = False


def settings() -> Settings:
    """Effective Settings: CLI flags over environment over kbgraph.toml over defaults. Raises ConfigError for a
    knowledge-base name that is a folder of the home (kbgraph.home: its store would be made inside it)."""
    s = Settings(**State.overrides)
    check_not_reserved(s.name)
    return s


def existing_settings() -> Settings:
    """:func:`settings` of a knowledge base that exists (kbgraph.store.knowledge_base_exists): what the verbs that
    only read one (``ask``, ``stats``, ``delete``, ``tags classes|pairs``) open, so that a mistyped ``--kb`` makes
    no folder, starts no server and answers nothing. Raises KnowledgeBaseNotFound (exit 66) naming the ingest
    that makes it; StoreUnavailable when a store that must be asked cannot be reached."""
    s = settings()
    if not knowledge_base_exists(s):
        raise KnowledgeBaseNotFound(
            f"no knowledge base {s.name!r} at {store_class(s).kb_location(s)}: ingest into it first "
            f"(kbgraph --kb {s.name} ingest FOLDER), or name an existing one with --kb"
        )
    return s


@app.callback()
def _main(
    kb: str | None = typer.Option(None, "--kb", help="Knowledge-base name (env KBGRAPH_NAME)."),
    uri: str | None = typer.Option(None, "--uri", help="Store URI (bolt://, neo4j://, neo4j+s://, falkor://)."),
    home: str | None = typer.Option(None, "--home", help="kbgraph data folder (env KBGRAPH_HOME)."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks."),
) -> None:
    overrides: dict[str, Any] = {}
    if kb:
        overrides["name"] = kb
    if uri:
        overrides["uri"] = uri
    if home:
        overrides["home"] = home
    State.overrides = overrides
    State.debug = debug


def print_json(data: object) -> None:
    """``data`` as indented JSON on stdout."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
