"""kbgraph as a service: an HTTP API (``kbgraph serve``) and an MCP server (``kbgraph mcp``, and ``/mcp`` on
``kbgraph serve``), each a thin layer over :class:`kbgraph.kb.KnowledgeBase`: one library call per endpoint or
tool, as the CLI is.

Modules, one job each:

* ``kbs`` — knowledge-base names (validated: no path can leave ``<home>``, no folder of the home's own) and the
  per-process pool of open knowledge bases (one store connection per name; on the embedded store one FalkorDB
  server per KB folder, kept up while the service holds its connection; on Neo4j one database per knowledge
  base): only existing ones are opened for reads, at most ``serve_max_open_kbs`` at once (the embedded servers of
  the ones it closes stopped too);
* ``jobs`` — ingestion jobs run in the background, one at a time per knowledge base, each seen by the key that
  submitted it;
* ``guard`` — the ASGI guard in front of every route: Host, plain path, bearer token, cross-site writes and
  JSON bodies, request size;
* ``authz`` — the right each route needs (one table), checked after routing on the decoded path parameters;
* ``access`` — what a request may do: the folders ingestion may read (``serve_ingest_roots``) and the scoped
  API keys (``KBGRAPH_API_KEYS_FILE``: knowledge bases and rights per key, stored as hashes);
* ``uploads`` — files uploaded to ``POST /v1/kb/{name}/ingest``: names checked, kept per knowledge base and
  file name under ``<home>/<kb>/uploads/`` (a re-upload updates its document), written atomically;
* ``models`` — the request and response models (the library's ``Answer``, ``IngestReport``, ``StoreStats``
  reused);
* ``invalid`` — bodies that do not validate: a 422 that always serialises, text fields without lone surrogates;
* ``views`` — what a restricted key sees of server paths (relative to the upload folder or ingest root);
* ``routes`` — the ``/v1`` endpoints, ``/healthz`` and ``/readyz``; ``app`` — the FastAPI factory;
* ``mcp`` — the MCP tools (official ``mcp`` SDK).

Needs the ``serve`` extra (``pip install -e ".[serve]"``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import FastAPI
    from mcp.server.mcpserver import MCPServer

    from kbgraph.serve.jobs import JobManager
    from kbgraph.serve.kbs import KBPool
    from kbgraph.settings import Settings

# The one place where the package's modules that import fastapi, uvicorn and mcp at their top are loaded: when an
# application is built, so that importing kbgraph.serve (the CLI does, for `kbgraph serve keys`) stays cheap.


def create_app(settings: Settings | None = None) -> FastAPI:
    """The FastAPI application of ``kbgraph serve`` (see :func:`kbgraph.serve.app.create_app`)."""
    from kbgraph.serve.app import create_app as _create  # lazy: serve.app imports fastapi, uvicorn and mcp

    return _create(settings)


def build_mcp(pool: KBPool, jobs: JobManager | None = None) -> MCPServer:
    """The MCP server of ``kbgraph mcp`` and ``/mcp`` (see :func:`kbgraph.serve.mcp.build_mcp`)."""
    from kbgraph.serve.mcp import build_mcp as _build  # lazy: serve.mcp imports mcp

    return _build(pool, jobs)
