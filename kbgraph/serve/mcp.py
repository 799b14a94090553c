"""The MCP server of kbgraph, with the official ``mcp`` SDK (2.x ``MCPServer``): ``kbgraph mcp``
serves it over stdio, ``kbgraph serve`` over streamable HTTP at ``/mcp``.

Tools, one library call each, on the knowledge base ``kb`` (default: the configured one): ``ask``, ``search``,
``get_chunk``, ``browse``, ``list_documents``; read-only unless ``mcp_allow_ingest`` (KBGRAPH_MCP_ALLOW_INGEST)
adds ``ingest``. Each description says what the tool returns and what it costs, so an agent can choose.
A library error becomes the tool's error result with the library's one-line message.

Scopes: over HTTP (``/mcp``) each call is checked against the request's API key
(kbgraph.serve.access: ``read`` for the read tools, ``write`` for ``ingest``; a knowledge base outside the key's
globs is refused), and ``ingest`` paths against ``serve_ingest_roots``; a restricted key sees its own jobs only,
and every result without absolute server paths (kbgraph.serve.views), as on the HTTP routes. A key scoped to
documents (issue 58) reads only its documents in every tool (kbgraph.serve.scoping: the tool's body inside the
key's document scope), and ``ingest`` is refused to it. Over stdio (``kbgraph mcp``) there is no
key: the client is a local process of the same user, unscoped (the roots still apply to ``ingest``).

``ask`` and ``search`` take ``filters``, a document filter as JSON (kbgraph.filters, docs/filters.md), joined to
a document-scoped key's own: only the documents both allow are read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field
from mcp.server.mcpserver.exceptions import ToolError

from kbgraph import __version__
from kbgraph.errors import KBGraphError
from kbgraph.query.models import Answer, ScoredChunk
from kbgraph.serve.access import SCOPE_KEY, KeyScope, unrestricted
from kbgraph.serve.jobs import Job, JobManager
from kbgraph.serve.kbs import KBPool
from kbgraph.serve.models import BrowseRows, ChunkInfo, DocumentInfo
from kbgraph.serve.scoping import request_filter, scoped
from kbgraph.serve.views import view_of
from kbgraph.text import one_line

INSTRUCTIONS = (
    "kbgraph answers questions from a knowledge base of ingested documents (PIKE-RAG on a graph database). "
    "Use `search` to find evidence cheaply, `ask` for an answer with citations, `get_chunk` to read a cited "
    "chunk in full with its provenance, `list_documents` to see what the knowledge base holds."
)

FILTERS = (
    '`filters`: only the documents whose metadata it allows, a JSON filter: a leaf {"op": "eq"|"in"|'
    '"range"|"prefix"|"exists", "key": K, "value": V | "values": [..] | "gte"/"gt"/'
    '"lte"/"lt": B} or {"op": "and"|"or", "filters": [..]} or {"op": "not", '
    '"filter": F}, e.g. {"op": "prefix", "key": "folder", "value": "hr/"}; '
    "`list_documents` shows each document's metadata keys."
)
ASK = (
    "Answer a question from the knowledge base with citations. Returns the answer text, its citations "
    "(chunk id, document title and URI, page, quote) and, with an LLM configured on the server, the "
    "rationale rounds of knowledge-aware decomposition (PIKE-RAG Algorithm 1). Cost: with an LLM several LLM "
    "calls (seconds to a minute); without one, a retrieval-only answer (the best-matching sentences, ~0.1-1 s). "
    "`method`: a method name the server knows (omit for its default); `k`: evidence chunks of a retrieval-only "
    "answer. " + FILTERS
)
SEARCH = (
    "Retrieve the top-k chunks for a question without answering (multi-layer vector seeds and score "
    "propagation over the graph). Returns the chunks best first: id, score, text, document title and URI, "
    "section, page. Cost: no LLM, one embedding and a few graph queries (~0.1-1 s); the text of k chunks "
    "(~250 words each) in the result. " + FILTERS
)
GET_CHUNK = (
    "Read one chunk by id (from `search`, or a citation's chunk_id of `ask`). Returns its full text, table "
    "summary, kind, page, section path and its document's id, title and URI. Cost: one graph lookup; ~250 words."
)
BROWSE = (
    "Run a ready graph query: 'document' (a document's sections, chunks, atomic questions, triples, entities; "
    "params document, limit, per_chunk), 'entity' (an entity's neighbourhood; params entity, limit), 'question' "
    "(a saved rationale; param question) / 'questions' (params limit), 'top_entities' (limit), 'changed' (the "
    "last ingestion's documents; param run), 'orphans' (limit). `params` maps those names to values; integers "
    "0-10000. Returns rows of node properties. Cost: one graph query; rows can be large, keep `limit` small."
)
LIST_DOCUMENTS = (
    "List the knowledge base's documents. Returns them by title: id, title, source URI, MIME type, status, "
    "ingestion time, chunk count, metadata (the keys and values `filters` name). Cost: one graph query; `limit` rows (default 100)."
)
INGEST = (
    "Ingest files, folders or .jsonl corpora that exist on the server's file system into the knowledge base "
    "(incremental: unchanged files are skipped). Returns a job at once (id, status 'queued'); call again with "
    "`job_id` only to get its status and report. Cost: minutes for large folders (parsing, embedding; with an "
    "LLM, LLM calls per chunk); writes to the knowledge base."
)


M = TypeVar("M", bound=BaseModel)

#: Bounds of the tools' numbers, as on the HTTP routes (kbgraph.serve.models, kbgraph.serve.routes).
AskK = Annotated[int, Field(ge=1, le=100)]
SearchK = Annotated[int, Field(ge=1, le=200)]
Limit = Annotated[int, Field(ge=1, le=10_000)]
Skip = Annotated[int, Field(ge=0, le=10_000_000)]


def _tool(server: MCPServer, description: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a tool whose library errors (and the ValueErrors it raises) reach the client as the tool's error
    result with their one-line message (the SDK hides the text of any other exception)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except (KBGraphError, ValueError) as exc:
                raise ToolError(one_line(exc, 1000)) from exc

        server.add_tool(call, description=description)
        return fn

    return register


def _key(ctx: Context | None) -> KeyScope | None:
    """The API key of the HTTP request that carries a tool call (None over stdio, or without keys)."""
    try:
        request = ctx.request_context.request if ctx is not None else None
    except ValueError:  # no request context (a direct call)
        request = None
    key: KeyScope | None = getattr(request, "scope", {}).get(SCOPE_KEY) if request is not None else None
    return key


def _scoped(ctx: Context | None, pool: KBPool, kb: str | None, right: str = "read") -> str:
    """The knowledge base a tool call uses (``kb`` or the default), checked against the API key of the HTTP
    request that carries the call (none over stdio). Raises Forbidden (the tool's error result)."""
    name = kb or pool.default
    key = _key(ctx)
    if key is not None:
        key.check(name, right)
    return name


def _shown(ctx: Context | None, pool: KBPool, name: str, model: M) -> M:
    """``model`` as the call's key may see it: server paths for an unrestricted caller only (kbgraph.serve.views)."""
    return model if unrestricted(_key(ctx)) else view_of(pool.settings_for(name)).model(model)


def build_mcp(pool: KBPool, jobs: JobManager | None = None) -> MCPServer:
    """The MCP server over ``pool``: read-only tools, plus ``ingest`` when ``pool.settings.serve.mcp_allow_ingest`` (a
    JobManager over the same pool is made if none is given)."""
    server = MCPServer("kbgraph", instructions=INSTRUCTIONS, version=__version__)

    @_tool(server, ASK)
    def ask(
        question: str,
        kb: str | None = None,
        method: str | None = None,
        k: AskK = 5,
        filters: dict[str, Any] | None = None,
        ctx: Context | None = None,
    ) -> Answer:
        name = _scoped(ctx, pool, kb)
        filt = request_filter(_key(ctx), filters)
        with scoped(pool, name, _key(ctx)) as base:
            return _shown(ctx, pool, name, base.ask(question, method=method, k=k, filters=filt))

    @_tool(server, SEARCH)
    def search(
        question: str,
        kb: str | None = None,
        k: SearchK = 5,
        method: str | None = None,
        filters: dict[str, Any] | None = None,
        ctx: Context | None = None,
    ) -> list[ScoredChunk]:
        options: dict[str, Any] = {"method": method} if method else {}
        name = _scoped(ctx, pool, kb)
        filt = request_filter(_key(ctx), filters)
        with scoped(pool, name, _key(ctx)) as base:
            found = base.retrieve(question, k=k, filters=filt, **options)
        return [_shown(ctx, pool, name, chunk) for chunk in found]

    @_tool(server, GET_CHUNK)
    def get_chunk(chunk_id: str, kb: str | None = None, ctx: Context | None = None) -> ChunkInfo:
        name = _scoped(ctx, pool, kb)
        with scoped(pool, name, _key(ctx)) as base:
            row = base.chunk(chunk_id)
        if row is None:
            raise ValueError(f"no chunk {chunk_id!r} in knowledge base {name!r}")
        return _shown(ctx, pool, name, ChunkInfo(**row))

    @_tool(server, BROWSE)
    def browse(
        query: str, kb: str | None = None, params: dict[str, Any] | None = None, ctx: Context | None = None
    ) -> BrowseRows:
        name = _scoped(ctx, pool, kb)
        with scoped(pool, name, _key(ctx)) as base:
            rows = base.browse(query, **(params or {}))
        return _shown(ctx, pool, name, BrowseRows(kb=name, query=query, rows=rows))

    @_tool(server, LIST_DOCUMENTS)
    def list_documents(
        kb: str | None = None, limit: Limit = 100, skip: Skip = 0, ctx: Context | None = None
    ) -> list[DocumentInfo]:
        name = _scoped(ctx, pool, kb)
        with scoped(pool, name, _key(ctx)) as base:
            rows = base.documents(limit=limit, skip=skip)
        return [_shown(ctx, pool, name, DocumentInfo(**row)) for row in rows]

    if pool.settings.serve.mcp_allow_ingest:
        manager = jobs or JobManager(pool)

        @_tool(server, INGEST)
        def ingest(
            paths: list[str] | None = None,
            kb: str | None = None,
            prune: bool = False,
            job_id: str | None = None,
            ctx: Context | None = None,
        ) -> Job:
            if job_id:
                found = manager.get(job_id, _key(ctx))
                if found is None:
                    raise ValueError(f"no job {job_id!r}")
                return _shown(ctx, pool, _scoped(ctx, pool, found.kb, "write"), found)
            if not paths:
                raise ValueError("give `paths` to ingest, or `job_id` to see a job")
            name = _scoped(ctx, pool, kb, "write")
            return _shown(ctx, pool, name, manager.submit(name, paths, prune=prune, owner=_key(ctx)))

    return server
