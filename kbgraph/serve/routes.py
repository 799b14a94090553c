"""The endpoints of ``kbgraph serve``: one library call each, on the knowledge base the path
names. Handlers are plain functions, run on FastAPI's thread pool; the requests of a knowledge base share its
store, each store call borrowing a connection of the store's pool, none held across a request
(:class:`kbgraph.serve.kbs.KBPool`). Library errors become HTTP statuses in ``kbgraph.serve.app``.

A streamed ask (``"stream": true`` or ``Accept: text/event-stream``) answers with Server-Sent
Events, one per ``KnowledgeBase.ask(..., stream=True)`` event (kbgraph.query.streaming), each ``data`` one line
of JSON:

* ``event: delta``  ``{"text": ...}``, the next piece of the answer as the LLM writes it;
* ``event: reset``  ``{}``, the deltas so far are void (the answer text starts again);
* ``event: round``  a TraceRound of Algorithm 1 (PIKE-RAG §5.3.2) as soon as it finished;
* ``event: answer`` the whole response of the JSON form (Answer + ``saved``); the deltas after the last reset
  join to its ``answer``;
* ``event: error``  ``{"detail", "error", "status"}``: a library error after the stream began (the status it
  has without streaming: 502 LLM, 503 store, ...);
* ``event: done``   ``{}``, always last.

A bad question, method or knowledge-base name is refused before the stream begins (400, as without it). A
client that goes away stops the ask at its next event.

A restricted key (kbgraph.serve.access.unrestricted) sees every response through the knowledge base's
kbgraph.serve.views.PathView: no absolute server path (document URIs, job paths, the store's location).

A key scoped to documents (issue 58) reads only its documents: every route here opens the knowledge base with
kbgraph.serve.scoping ``scoped`` (the body inside the key's document scope), ask and search join the request's
``filters`` to the key's, and stats count the key's documents and chunks only (kbgraph.serve.scoping
``scoped_stats``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import anyio
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from fastapi import APIRouter, Depends, HTTPException, Request, Response, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool

from kbgraph.errors import KBGraphError
from kbgraph.filters import Filter
from kbgraph.kb import KnowledgeBase
from kbgraph.query.ask import clean_question
from kbgraph.query.methods.registry import get_method
from kbgraph.store import store_class
from kbgraph.text import one_line

from kbgraph.models import StoreStats
from kbgraph.serve.errors import status_of
from kbgraph.serve.access import Forbidden, unrestricted
from kbgraph.serve.authz import authorize, key_of, require
from kbgraph.serve.invalid import ValidatedRoute
from kbgraph.serve.jobs import Job, JobManager
from kbgraph.serve.kbs import KBPool, check_name
from kbgraph.serve.metrics import Metrics
from kbgraph.serve.pages import NoPage, PageCache
from kbgraph.serve.scoping import key_scope, request_filter, scoped, scoped_stats
from kbgraph.serve.models import (
    AskRequest,
    AskResponse,
    BrowseRows,
    ChunkInfo,
    Deleted,
    DocumentInfo,
    DocumentList,
    IngestRequest,
    Ready,
    SearchRequest,
    SearchResponse,
)
from kbgraph.serve.uploads import FIELDS, FILES_FIELD, MAX_FILES, check_form, save_uploads, uploads_dir
from kbgraph.serve.views import PathView, view_of

#: Service routes (``/healthz``, ``/readyz``): authenticated by the guard alone; ``/readyz`` filters by the key.
service = APIRouter()
#: The ``/v1`` routes: each authorized after routing, on its decoded parameters (kbgraph.serve.authz).
router = APIRouter(dependencies=[Depends(authorize)], route_class=ValidatedRoute)
KB = "/v1/kb/{name}"


def _pool(request: Request) -> KBPool:
    pool: KBPool = request.app.state.pool
    return pool


def _jobs(request: Request) -> JobManager:
    jobs: JobManager = request.app.state.jobs
    return jobs


def _pages(request: Request) -> PageCache:
    pages: PageCache = request.app.state.pages
    return pages


def _metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


M = TypeVar("M", bound=BaseModel)


def _use(request: Request, name: str) -> AbstractContextManager[KnowledgeBase]:
    """Knowledge base ``name`` for one request, the body inside the request key's document scope
    (kbgraph.serve.scoping ``scoped``)."""
    return scoped(_pool(request), name, key_of(request))


def _view(request: Request, name: str) -> PathView | None:
    """The path view of knowledge base ``name`` for a restricted key; None for an unrestricted caller."""
    return None if unrestricted(key_of(request)) else view_of(_pool(request).settings_for(name))


def _shown(request: Request, name: str, model: M) -> M:
    """``model`` as the request's key may see it (kbgraph.serve.views: server paths for an unrestricted key only)."""
    view = _view(request, name)
    return model if view is None else view.model(model)


@service.get("/healthz", tags=["service"])
def healthz() -> dict[str, str]:
    """Liveness: the process answers (no store or model is touched; open without the API key)."""
    return {"status": "ok"}


@service.get("/readyz", response_model=Ready, response_model_exclude_none=True, tags=["service"])
def readyz(request: Request) -> Ready:
    """Readiness: the embedder is loaded (loading it on the first call: seconds) and the served knowledge base's
    store answers, when that knowledge base exists; one that no ingest made yet is not opened (a read makes
    nothing), and the server is ready all the same (``exists`` false). 503 with the reason otherwise. The served
    knowledge base, its store and the open ones are shown only to an unrestricted caller (no keys configured,
    KBGRAPH_API_KEY, or a key with every right on every knowledge base)."""
    pool = _pool(request)
    name = pool.default
    settings = pool.settings_for(name)
    exists = pool.exists(name)
    if exists:
        with pool.use(name) as kb:
            kb.documents(limit=1)
            embedder, location = kb.embedder, kb.store.location
    else:
        embedder, location = KnowledgeBase(settings=settings).embedder, store_class(settings).kb_location(settings)
    model = str(getattr(embedder, "model_name", type(embedder).__name__))
    if not unrestricted(key_of(request)):
        return Ready(status="ready", embedder=model)
    return Ready(
        status="ready",
        kb=name,
        exists=exists,
        backend=store_class(settings).backend,
        store=location,
        embedder=model,
        open=pool.names(),
    )


@service.get(
    "/metrics",
    tags=["service"],
    response_class=Response,
    responses={
        200: {
            "content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}},
            "description": "The server's counters in Prometheus text format.",
        }
    },
)
def metrics(request: Request) -> Response:
    """The server's counters in Prometheus text format (kbgraph.serve.metrics): requests by route template and
    status, latency, answers by method and their LLM usage, what ingestion jobs wrote, open knowledge bases. The
    whole server's numbers: 403 for a key that is not unrestricted (every right on every knowledge base)."""
    if not unrestricted(key_of(request)):
        raise Forbidden(
            "/metrics counts the whole server: it needs a key with every right on every knowledge base "
            "(KBGRAPH_API_KEY, or kbgraph serve keys add --kb '*' --rights read,write)"
        )
    return Response(content=generate_latest(_metrics(request).registry), media_type=CONTENT_TYPE_LATEST)


@router.post(
    KB + "/ask",
    response_model=AskResponse,
    tags=["query"],
    responses={
        200: {
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
            "description": "The Answer; with `stream` or `Accept: text/event-stream`, Server-Sent Events.",
        }
    },
)
def ask(name: str, body: AskRequest, request: Request) -> Response:
    """Answer a question with citations and rationale (``KnowledgeBase.ask``; PIKE-RAG §5.3, Algorithm 1 with
    an LLM, retrieval only without). 400 for an empty or over-long question or an unknown method. With
    ``"stream": true`` or ``Accept: text/event-stream``: Server-Sent Events (delta, round, answer, done; see the
    module doc). The AskResponse is validated once, where it is built, and sent as its own JSON: returned as a
    model, FastAPI would validate and serialise it again in its thread pool. ``"save": true`` writes into the
    graph: 403 for a key without the ``write`` right on the knowledge base. ``filters``: only the documents it
    allows (within the key's own, for a document-scoped key); 400 naming an unknown key or a bad value."""
    if body.save:
        require(request, name, "write", 'saving the rationale ("save": true) writes it into the knowledge base')
    filt = request_filter(key_of(request), body.filters)
    accept = request.headers.get("accept", "")
    if body.stream or ("text/event-stream" in accept and "application/json" not in accept):
        check_name(name)
        clean_question(body.question)
        if body.method is not None:
            get_method(body.method)
        if filt is not None:
            with _use(request, name) as kb:
                kb.scope(filt)  # the key's scope (403) and the filter (400) checked before the stream begins
        return StreamingResponse(
            _sse_body(_sse_events(_pool(request), name, body, _view(request, name), _metrics(request), filt)),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    with _use(request, name) as kb:
        answer = kb.ask(body.question, method=body.method, k=body.k, explain=body.explain, save=body.save, filters=filt)
        saved = kb.last_saved if body.save else None
    _metrics(request).answered(answer)
    reply = _shown(request, name, AskResponse(**answer.model_dump(), saved=saved))
    return Response(content=reply.model_dump_json(), media_type="application/json")


def _sse(event: str, data: object) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _sse_events(
    pool: KBPool,
    name: str,
    body: AskRequest,
    view: PathView | None = None,
    metrics: Metrics | None = None,
    filt: Filter | None = None,
) -> Iterator[str]:
    """The SSE messages of a streamed ask (module doc) on knowledge base ``name``, through ``view`` if any; the
    answer counted in ``metrics``; ``filt``: the documents it reads (the request's and key's filters joined,
    kbgraph.serve.scoping ``request_filter``: the stream's worker keeps its scope, no ``within`` spans a yield)."""
    show: Callable[[Any], Any] = view.data if view is not None else (lambda data: data)
    try:
        with pool.use(name) as kb:
            ask = kb.ask(
                body.question,
                method=body.method,
                k=body.k,
                explain=body.explain,
                save=body.save,
                stream=True,
                filters=filt,
            )
            with ask as events:
                for event in events:
                    if event.type == "answer" and event.answer is not None:
                        saved = kb.last_saved if body.save else None
                        if metrics is not None:
                            metrics.answered(event.answer)
                        answer = AskResponse(**event.answer.model_dump(), saved=saved)
                        yield _sse("answer", show(answer.model_dump(mode="json")))
                    elif event.type == "round" and event.round is not None:
                        yield _sse("round", show(event.round.model_dump(mode="json")))
                    elif event.type == "delta":
                        yield _sse("delta", {"text": event.text})
                    elif event.type == "reset":
                        yield _sse("reset", {})
    except KBGraphError as exc:
        yield _sse("error", {"detail": one_line(exc, 1000), "error": type(exc).__name__, "status": status_of(exc)})
    except Exception as exc:  # noqa: BLE001 - the response has begun: the client learns of it in the stream
        yield _sse(
            "error",
            {"detail": one_line(f"{type(exc).__name__}: {exc}", 1000), "error": type(exc).__name__, "status": 500},
        )
    yield _sse("done", {})


async def _sse_body(messages: Iterator[str]) -> AsyncIterator[str]:
    """``messages`` read on the thread pool; closed (stopping the ask) however the response ends, a client that
    went away included."""
    try:
        while True:
            message = await run_in_threadpool(next, messages, None)
            if message is None:
                return
            yield message
    finally:
        with anyio.CancelScope(shield=True):
            await run_in_threadpool(messages.close)  # type: ignore[attr-defined]


@router.post(KB + "/search", response_model=SearchResponse, tags=["query"])
def search(name: str, body: SearchRequest, request: Request) -> SearchResponse:
    """The top ``k`` chunks for a question without an answer (``KnowledgeBase.retrieve``; PIKE-RAG §5.2.3).
    ``filters``: as for ask."""
    options = {"method": body.method} if body.method else {}
    filt = request_filter(key_of(request), body.filters)
    with _use(request, name) as kb:
        chunks = kb.retrieve(body.question, k=body.k, explain=body.explain, filters=filt, **options)
    return _shown(request, name, SearchResponse(question=body.question, method=body.method, chunks=chunks))


#: The two bodies of POST /ingest in the OpenAPI schema (the handler reads the body itself: JSON or multipart).
INGEST_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": IngestRequest.model_json_schema()},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": [FILES_FIELD],
                    "properties": {
                        FILES_FIELD: {
                            "type": "array",
                            "items": {"type": "string", "format": "binary"},
                            "description": "Files to ingest, kept as <home>/<kb>/uploads/<file name>.",
                        },
                        "wait": {"type": "boolean", "default": False},
                    },
                }
            },
        },
    }
}


@router.post(
    KB + "/ingest", response_model=Job, status_code=status.HTTP_202_ACCEPTED, tags=["ingest"], openapi_extra=INGEST_BODY
)
async def ingest(name: str, request: Request) -> Job:
    """Queue the ingestion of files, folders or .jsonl corpora on the server (JSON ``{"paths": [...]}``), or of
    uploaded files (``multipart/form-data``, one ``files`` part each; kbgraph.serve.uploads: a re-uploaded name
    updates its document), through ``KnowledgeBase.ingest`` (PIKE-RAG §5.1-§5.2): 202 with the job; poll
    ``GET /v1/jobs/{id}``. Jobs of one knowledge base run one at a time. Uploads: 400 for a hostile, empty or
    repeated file name (nothing written), 413 over ``KBGRAPH_MAX_UPLOAD_BYTES``; a file the library cannot read
    is a failed or skipped file of the job's report, as with the CLI."""
    jobs = _jobs(request)
    content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type != "multipart/form-data":  # the guard let only application/json through otherwise
        try:
            body = IngestRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            raise RequestValidationError(
                [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
            ) from None
        job = jobs.submit(name, body.paths, prune=body.prune, wait=body.wait, owner=key_of(request))
        return _shown(request, name, job)
    folder = uploads_dir(jobs.pool.settings_for(name))  # 400/404 before the body is read
    async with request.form(max_files=MAX_FILES, max_fields=len(FIELDS)) as form:
        files, wait = check_form(form)
        try:
            paths = await save_uploads(files, folder)
        except OSError as exc:
            view = _view(request, name)
            detail = f"cannot store the uploaded files in {folder}: {exc.strerror or exc}"
            raise HTTPException(status.HTTP_507_INSUFFICIENT_STORAGE, view.text(detail) if view else detail) from exc
    return _shown(request, name, jobs.submit(name, paths, wait=wait, uploaded=True, owner=key_of(request)))


@router.get("/v1/jobs/{job_id}", response_model=Job, tags=["ingest"])
def job(job_id: str, request: Request) -> Job:
    """An ingestion job: queued, running, done (with the IngestReport) or failed (with the error). 404 for an
    unknown job, or one another key submitted while this key is restricted (kbgraph.serve.jobs)."""
    found = _jobs(request).get(job_id, key_of(request))
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no job {job_id!r} (jobs live in the server's memory)")
    return _shown(request, found.kb, found)


@router.get(KB + "/documents", response_model=DocumentList, tags=["documents"])
def documents(name: str, request: Request, limit: int = 100, skip: int = 0) -> DocumentList:
    """The documents by title, with status and chunk count (``KnowledgeBase.documents``). 400 unless ``limit``
    is 1-10000 and ``skip`` 0-10000000. A document-scoped key: its documents only."""
    if not (1 <= limit <= 10_000) or not (0 <= skip <= 10_000_000):
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "limit must be 1-10000 and skip 0-10000000")
    with _use(request, name) as kb:
        rows = kb.documents(limit=limit, skip=skip)
    return _shown(request, name, DocumentList(kb=name, documents=[DocumentInfo(**row) for row in rows]))


@router.delete(KB + "/documents/{document:path}", response_model=Deleted, tags=["documents"])
def delete_document(name: str, document: str, request: Request) -> Deleted:
    """Remove a document's whole subgraph and the entities no other document uses (``KnowledgeBase.delete``).
    ``document``: its id (doc:…) or source URI. 404 when there is none."""
    with _pool(request).use(name) as kb:
        counts = kb.delete(document)
    if not counts.get("documents"):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no document {document!r} in knowledge base {name!r}")
    return Deleted(kb=name, document=document, deleted=counts)


@router.get(
    KB + "/chunks/{chunk_id:path}/page.png",
    tags=["documents"],
    response_class=Response,
    responses={
        200: {
            "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}},
            "description": "The chunk's PDF page, its text highlighted.",
        }
    },
)
def chunk_page(name: str, chunk_id: str, request: Request) -> Response:
    """The PDF page of a chunk as a PNG, at most 1200 x 1600 pixels, the chunk's text highlighted where it is
    found on the page (kbgraph.serve.pages; cached in memory). 404 when there is no such chunk or it is not from
    a PDF file that is still there (or, for a document-scoped key, outside its documents). Registered before
    ``.../chunks/{id}``, whose path would take it."""
    with _use(request, name) as kb:
        row = kb.chunk(chunk_id)
    if row is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no chunk {chunk_id!r} in knowledge base {name!r}")
    try:
        png = _pages(request).image(row)
    except NoPage as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, one_line(exc, 300)) from None
    return Response(content=png, media_type="image/png", headers={"Cache-Control": "private, max-age=300"})


@router.get(KB + "/chunks/{chunk_id:path}", response_model=ChunkInfo, tags=["documents"])
def chunk(name: str, chunk_id: str, request: Request) -> ChunkInfo:
    """One chunk's text with its provenance (``KnowledgeBase.chunk``); 404 when there is none (or, for a
    document-scoped key, when it is outside its documents: the same answer)."""
    with _use(request, name) as kb:
        row = kb.chunk(chunk_id)
    if row is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no chunk {chunk_id!r} in knowledge base {name!r}")
    return _shown(request, name, ChunkInfo(**row))


@router.get(KB + "/stats", response_model=StoreStats, tags=["documents"])
def stats(name: str, request: Request) -> StoreStats:
    """Node counts per label and relationship counts per type (``KnowledgeBase.stats``); ``location`` (the store's
    folder or URI) empty for a restricted key. A document-scoped key sees the counts of its documents and their
    chunks only (``nodes``: Document, Chunk; no relationships: kbgraph.serve.scoping ``scoped_stats``)."""
    with _pool(request).use(name) as kb:
        scope = key_scope(kb, key_of(request))
        found = kb.stats() if scope is None else scoped_stats(kb, scope)
    return _shown(request, name, found)


@router.get(KB + "/browse/{query}", response_model=BrowseRows, tags=["documents"])
def browse(name: str, query: str, request: Request) -> BrowseRows:
    """Run a ready browse query (``KnowledgeBase.browse``: document, entity, question, questions, top_entities,
    changed, orphans); its parameters come as query-string values over their defaults. 400 for an unknown query
    or parameter. A document-scoped key sees only what its documents hold (entities: those its chunks mention,
    with their mentions in its documents; saved questions: those whose every used chunk is in them)."""
    params = dict(request.query_params)
    with _use(request, name) as kb:
        rows = kb.browse(query, **params)
    return _shown(request, name, BrowseRows(kb=name, query=query, rows=rows))
