"""A local Neo4j 5 of a benchmark's own (kbgraph.neo4j_local, the Community server from Maven Central), beside
any other on the machine: its own folder, ports and password. Imported by the benchmark scripts of this folder
(run as ``python -m benchmarks.<name>`` from the repository root)."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from kbgraph.neo4j_local import Neo4jLocal
from kbgraph.settings import Settings

#: The Neo4j jars kbgraph's own `kbgraph neo4j build` fetched, shared by every benchmark server.
LIB_DIR = Path.home() / ".kbgraph" / "neo4j-local" / "lib"


def start_local_neo4j(
    settings: Settings, folder: Path, *, bolt_port: int, http_port: int, timeout: float
) -> tuple[Settings, Neo4jLocal]:
    """Start (or reuse) the server in ``folder`` on ``bolt_port``/``http_port`` with the password
    'kbgraph-bench'; returns (``settings`` pointed at it, the server, for ``stop()``). Raises as
    ``Neo4jLocal.start`` when it does not answer within ``timeout`` seconds."""
    settings = settings.updated(
        {
            "neo4j_local_home": folder,
            "neo4j_bolt_port": bolt_port,
            "neo4j_http_port": http_port,
            "neo4j_password": SecretStr("kbgraph-bench"),
        }
    )
    local = Neo4jLocal(settings, lib_dir=LIB_DIR)
    return settings.updated({"uri": local.start(timeout=timeout).bolt_uri}), local
