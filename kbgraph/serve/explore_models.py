"""Response models of the web app's Explore and Runs routes (kbgraph.serve.explore; the OpenAPI schema at
``/docs``): the graph the page draws (nodes with their label and properties, edges with their relationship type),
a node's neighbours one page at a time, the search hits, the ingestion runs and the caller's rights."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class GraphNode(BaseModel):
    """A node of the knowledge graph: ``id`` (kbgraph's own, e.g. ``ent:…``, ``chunk:…``), ``label`` (one of
    kbgraph.models.NODE_LABELS), ``caption`` (a short text to draw: the title, name or text, at most 120
    characters) and ``properties`` (as stored, without vectors; a document's ``uri`` as the key may see it:
    kbgraph.serve.views)."""

    id: str
    label: str
    caption: str
    properties: dict[str, Any] = Field(default_factory=dict)


class GraphEdge(BaseModel):
    """A relationship from ``source`` to ``target`` (node ids) of ``type`` (kbgraph.models.RELATIONSHIP_TYPES),
    or ``IN`` (a chunk's document, named by its ``document_id``) and ``CHANGED`` (a run's documents), which a view
    draws without a stored relationship."""

    source: str
    target: str
    type: str


class ExploreGraph(BaseModel):
    """What a named view (a ``kbgraph browse`` query) shows as a graph: ``view``, its ``title``, the parameter
    values it ran with, the nodes (each once) and the edges between them; ``rows``: the query's row count."""

    kb: str
    view: str
    title: str
    params: dict[str, int | str] = Field(default_factory=dict)
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    rows: int = 0


class Expansion(BaseModel):
    """A node with one page of its neighbours: ``neighbours`` (each once) and the ``edges`` that join them to
    ``node``, ``total`` neighbours in all (relationships: a neighbour joined twice counts twice), the page's
    ``skip`` and ``limit``, and ``more``: those after this page (ask again with ``skip`` + ``limit``). The
    document of a node that has a ``document_id`` comes with every page, joined by ``IN``, uncounted."""

    kb: str
    node: GraphNode
    neighbours: list[GraphNode]
    edges: list[GraphEdge]
    total: int
    skip: int
    limit: int
    more: int


class SearchHits(BaseModel):
    """Documents (by title) and entities (by name) that match ``text``, best first: full-text matches of whole
    words, or, when there are none, the names that hold ``text`` (a part of a word)."""

    kb: str
    text: str
    documents: list[GraphNode]
    entities: list[GraphNode]


class RunDocument(BaseModel):
    """A document an ingestion run wrote (shown to a document-scoped key): its ``id``, ``title`` and ``uri`` (as the
    key may see it: kbgraph.serve.views)."""

    id: str
    title: str | None = None
    uri: str | None = None


class RunInfo(BaseModel):
    """An ingestion run (an ``IngestionRun`` node, written by ``kbgraph ingest`` and the server's jobs): times
    in ISO 8601 UTC, ``status`` (running, completed, failed, interrupted), the documents it ``added``,
    ``updated``, left ``unchanged``, ``deleted`` and the files that ``failed``, with one line per failure in
    ``errors`` ("path: reason"); ``paths``: what it was given. Counts are None while it runs. For a key scoped to
    documents (``scoped`` true) a run shows only its times and the ``documents`` of the key's scope it wrote (as
    they are now: a document written again by a later run is that run's); its status, counts, paths and errors,
    which are of every file it was given, are None or empty."""

    id: str
    started_at: str | None = None
    finished_at: str | None = None
    status: str | None = None
    added: int | None = None
    updated: int | None = None
    unchanged: int | None = None
    deleted: int | None = None
    failed: int | None = None
    chunks: int | None = None
    seconds: float | None = None
    paths: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    scoped: bool = False
    documents: list[RunDocument] = Field(default_factory=list)


class RunList(BaseModel):
    kb: str
    runs: list[RunInfo]


class Rights(BaseModel):
    """What the caller's key may do on knowledge base ``kb``: ``rights`` (of kbgraph.serve.access.RIGHTS),
    ``unrestricted`` (every right on every knowledge base: server paths are shown), ``keys`` (the server asks
    for a key), ``key`` (the key's name; None without keys) and ``documents`` (for a key scoped to documents, its
    filter as ``--where`` text; None: every document)."""

    kb: str
    rights: list[str]
    unrestricted: bool
    keys: bool
    key: str | None = None
    documents: str | None = None
