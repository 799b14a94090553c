"""The web app's Explore and Runs routes of ``kbgraph serve`` (issue 57): find a document or an entity by name,
a node with one page of its neighbours, the ``kbgraph browse`` queries as graphs, the ingestion runs, and what the
caller's key may do. Registered in kbgraph.serve.app beside the ``/v1`` routes of kbgraph.serve.routes, under the
same guard, authorization and path view:

====================================================  =====  ================================================
GET /v1/kb/{name}/rights                              key    the key's rights on the knowledge base (403 for a
                                                             knowledge base outside the key's scope)
GET /v1/kb/{name}/explore/search?q=&limit=            read   documents by title, entities by name
GET /v1/kb/{name}/explore/nodes/{id}?skip=&limit=     read   a node and one page of its neighbours
GET /v1/kb/{name}/explore/views/{view}?<params>       read   a browse query (kbgraph.serve.explore_views.VIEWS)
GET /v1/kb/{name}/runs?skip=&limit=                   read   the IngestionRuns, newest first
====================================================  =====  ================================================

The rights of these routes are in the one table, kbgraph.serve.authz.ROUTE_RIGHTS, so
:func:`kbgraph.serve.authz.authorize` checks them as every other ``/v1`` route and a key scoped to other knowledge
bases gets the same 403. A restricted key sees every response through the knowledge base's
kbgraph.serve.views.PathView (no server path: a document's ``uri``, a run's ``paths`` and ``errors``).

A key scoped to documents (``kbgraph serve keys add --where``, issue 58) uses these routes too (they are in
kbgraph.serve.authz.DOCUMENT_SCOPED): each opens its knowledge base with kbgraph.serve.scoping ``scoped``, so every
statement runs inside the key's document scope and declares ``$documents`` (cypher/browse/): the search finds its
documents and the entities their chunks mention, a node is found only if it is of its documents (an entity or tag:
only with a neighbour in them) and shows only its neighbours in them, the views are the browse queries under the
scope, and the runs are those that wrote one of its documents, each with those documents and nothing of the run's
other files (browse/runs_within: no status, counts, paths or errors).

Each read that returns documents, chunks or entities is one small function here (:func:`find_documents`,
:func:`find_entities`, :func:`node_page`, :func:`browse_view`, :func:`runs`). Only what complete documents hold is
returned (as by the browse queries).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, TypeVar

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from pydantic import BaseModel

from kbgraph.browse import get as browse_query, resolve_params
from kbgraph.kb import KnowledgeBase
from kbgraph.serve.access import unrestricted
from kbgraph.serve.authz import authorize, key_of
from kbgraph.serve.explore_models import (
    ExploreGraph,
    Expansion,
    GraphEdge,
    GraphNode,
    Rights,
    RunDocument,
    RunInfo,
    RunList,
    SearchHits,
)
from kbgraph.serve.explore_views import VIEWS, graph_node, view_graph
from kbgraph.serve.invalid import ValidatedRoute
from kbgraph.serve.kbs import KBPool
from kbgraph.serve.scoping import scoped
from kbgraph.serve.views import view_of
from kbgraph.store.scope import current_scope, overfetch

__all__ = ["browse_view", "find_documents", "find_entities", "node_page", "router", "runs"]

router = APIRouter(dependencies=[Depends(authorize)], route_class=ValidatedRoute)
KB = "/v1/kb/{name}"

#: The most neighbours, search hits and runs one request returns.
MAX_PAGE = 200
M = TypeVar("M", bound=BaseModel)


# --- the reads ------------------------------------------------------------------------------------------------
def find_documents(kb: KnowledgeBase, text: str, limit: int) -> list[GraphNode]:
    """Complete documents whose title matches ``text``: the full-text index's top ``limit`` (whole words, best
    first), else the titles that hold ``text`` (browse/find_documents, a scan). In a document scope, its documents
    only (both statements declare ``$documents``)."""
    hits = [(h.id, h.properties) for h in kb.store.fulltext_search("Document", text, limit)]
    if not hits:
        hits = [
            (r["id"], r["properties"]) for r in kb.store.run("browse/find_documents", {"text": text, "limit": limit})
        ]
    return [graph_node("Document", {**props, "id": node_id}) for node_id, props in hits]


def find_entities(kb: KnowledgeBase, text: str, limit: int) -> list[GraphNode]:
    """Entities whose name matches ``text``: the full-text index's top ``limit`` (whole words, best first),
    else the names that hold ``text``, an exact name first, then the most mentioned (browse/find_entities). In a
    document scope only those a chunk of its documents mentions: the index (which knows no scope) is read
    over-fetched and its hits kept by browse/entities_within, the scan counts the scope's mentions only."""
    scope = current_scope()
    wide = limit if scope is None else overfetch(limit, scope.fraction)
    hits = [(h.id, h.properties) for h in kb.store.fulltext_search("Entity", text, wide)]
    if scope is not None and hits:
        kept = {r["id"] for r in kb.store.run("browse/entities_within", {"ids": [i for i, _ in hits]})}
        hits = [(i, p) for i, p in hits if i in kept][:limit]
    if not hits:
        hits = [
            (r["id"], r["properties"]) for r in kb.store.run("browse/find_entities", {"text": text, "limit": limit})
        ]
    return [graph_node("Entity", {**props, "id": node_id}) for node_id, props in hits]


def node_page(kb: KnowledgeBase, name: str, node_id: str, skip: int, limit: int) -> Expansion | None:
    """The node ``node_id`` and its neighbours ``skip`` .. ``skip + limit`` (browse/neighbours: by relationship
    type, label and id), with the document its ``document_id`` names joined by ``IN`` on every page when no
    relationship of the page joins it (not counted in ``total``); None when there is no such node (or it belongs
    to a document that is not complete, or, in a document scope, it is not of its documents: browse/neighbours)."""
    rows = kb.store.run("browse/neighbours", {"id": node_id, "skip": skip, "limit": limit})
    if not rows:
        return None
    row = rows[0]
    node = graph_node(str(row["label"]), row["node"])
    seen: dict[str, GraphNode] = {}
    edges: list[GraphEdge] = []
    for item in row["neighbours"] or []:
        other = graph_node(str(item["label"]), item["node"])
        seen.setdefault(other.id, other)
        source, target = (node.id, other.id) if item["source"] == node.id else (other.id, node.id)
        edges.append(GraphEdge(source=source, target=target, type=str(item["type"])))
    document = graph_node("Document", row["document"]) if row.get("document") else None
    if document is not None and document.id not in seen:
        seen[document.id] = document
        edges.append(GraphEdge(source=node.id, target=document.id, type="IN"))
    total = int(row["total"])
    return Expansion(
        kb=name,
        node=node,
        neighbours=list(seen.values()),
        edges=edges,
        total=total,
        skip=skip,
        limit=limit,
        more=max(0, total - skip - len(row["neighbours"] or [])),
    )


def browse_view(kb: KnowledgeBase, name: str, view: str, params: dict[str, Any]) -> ExploreGraph:
    """The browse query ``view`` (one of kbgraph.serve.explore_views.VIEWS) with ``params`` over its defaults,
    as a graph. Raises ConfigError (400) for an unknown parameter or a bad value."""
    query = browse_query(view)
    values = resolve_params(query, params)  # first: a parameter of no query (``filters``) is refused, not passed on
    given: dict[str, Any] = dict(values)
    rows = kb.browse(query.name, **given)
    nodes, edges = view_graph(query.name, rows)
    return ExploreGraph(
        kb=name, view=query.name, title=query.title, params=values, nodes=nodes, edges=edges, rows=len(rows)
    )


def runs(kb: KnowledgeBase, skip: int, limit: int) -> list[RunInfo]:
    """The ingestion runs ``skip`` .. ``skip + limit``, newest first (browse/runs). In a document scope the runs
    that wrote one of its documents, each with those ``documents`` and ``scoped`` true, without the status, counts,
    paths and errors of the whole run (browse/runs_within)."""
    if current_scope() is not None:
        rows = kb.store.run("browse/runs_within", {"skip": skip, "limit": limit})
        return [
            RunInfo(
                id=row["id"],
                started_at=row["started_at"],
                finished_at=row["finished_at"],
                scoped=True,
                documents=[RunDocument(**d) for d in row["documents"] or []],
            )
            for row in rows
        ]
    rows = kb.store.run("browse/runs", {"skip": skip, "limit": limit})
    return [RunInfo(**{k: v for k, v in row.items() if v is not None}) for row in rows]


# --- the routes -----------------------------------------------------------------------------------------------
def _pool(request: Request) -> KBPool:
    pool: KBPool = request.app.state.pool
    return pool


def _use(request: Request, name: str) -> AbstractContextManager[KnowledgeBase]:
    """Knowledge base ``name`` with the body inside the request's key's document scope (kbgraph.serve.scoping)."""
    return scoped(_pool(request), name, key_of(request))


def _shown(request: Request, name: str, model: M) -> M:
    """``model`` as the request's key may see it (kbgraph.serve.views: server paths for an unrestricted key only)."""
    if unrestricted(key_of(request)):
        return model
    return view_of(_pool(request).settings_for(name)).model(model)


@router.get(KB + "/rights", response_model=Rights, tags=["explore"])
def rights(name: str, request: Request) -> Rights:
    """What the request's key may do on knowledge base ``name`` (the web app shows upload and delete only with
    ``write``): its rights, whether it is unrestricted, whether the server asks for keys, and for a key scoped to
    documents its filter (``documents``). 403 for a knowledge base outside the key's scope. Opens no knowledge base (it need not exist)."""
    key = key_of(request)
    if key is None:
        return Rights(kb=name, rights=["read", "write"], unrestricted=True, keys=False)
    if not key.allows_kb(name):
        key.check(name, "read")  # raises Forbidden with the key's scope in its message
    return Rights(
        kb=name,
        rights=sorted(key.rights),
        unrestricted=unrestricted(key),
        keys=True,
        key=key.name,
        documents=key.describe_where() if key.where is not None else None,
    )


@router.get(KB + "/explore/search", response_model=SearchHits, tags=["explore"])
def search_nodes(
    name: str, request: Request, q: str = Query(min_length=1, max_length=200), limit: int = Query(10, ge=1, le=MAX_PAGE)
) -> SearchHits:
    """Documents by title and entities by name matching ``q`` (at most ``limit`` of each): whole words through
    the full-text indexes, else a part of a title or name."""
    text = q.strip()
    if not text:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "q is blank: give a (part of a) title or name")
    with _use(request, name) as kb:
        hits = SearchHits(
            kb=name, text=text, documents=find_documents(kb, text, limit), entities=find_entities(kb, text, limit)
        )
    return _shown(request, name, hits)


@router.get(KB + "/explore/nodes/{node_id:path}", response_model=Expansion, tags=["explore"])
def node(
    name: str,
    node_id: str,
    request: Request,
    skip: int = Query(0, ge=0, le=10_000_000),
    limit: int = Query(25, ge=0, le=MAX_PAGE),
) -> Expansion:
    """The node ``node_id`` (any label; its properties without vectors) and its neighbours ``skip`` ..
    ``skip + limit`` with the relationships to them; ``more``: how many follow. 404 when there is no such node."""
    with _use(request, name) as kb:
        found = node_page(kb, name, node_id, skip, limit)
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no node {node_id[:200]!r} in knowledge base {name!r}")
    return _shown(request, name, found)


@router.get(KB + "/explore/views/{view}", response_model=ExploreGraph, tags=["explore"])
def view(name: str, view: str, request: Request) -> ExploreGraph:
    """The browse query ``view`` (top_entities, document, entity, orphans, changed) as a graph; its parameters
    come as query-string values over their defaults (``kbgraph browse --list``). 400 for another view, an
    unknown parameter or a bad value."""
    if view not in VIEWS:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, f"no view {view[:80]!r}; choose one of {', '.join(VIEWS)}")
    with _use(request, name) as kb:
        graph = browse_view(kb, name, view, dict(request.query_params))
    return _shown(request, name, graph)


@router.get(KB + "/runs", response_model=RunList, tags=["explore"])
def ingestion_runs(
    name: str, request: Request, skip: int = Query(0, ge=0, le=10_000_000), limit: int = Query(20, ge=1, le=MAX_PAGE)
) -> RunList:
    """The ingestion runs, newest first: started, finished, status, counts, and the failed files with their
    reasons; for a document-scoped key the runs that wrote its documents, with those documents only."""
    with _use(request, name) as kb:
        found = RunList(kb=name, runs=runs(kb, skip, limit))
    return _shown(request, name, found)
