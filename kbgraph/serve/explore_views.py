"""The rows of the ``kbgraph browse`` queries (kbgraph.browse.CATALOGUE) as graphs for the web app's Explore page:
pure functions, no store (the reads are kbgraph.serve.explore's).

A browse row holds nodes as property dicts in named columns, so the label of each node is its column's (the
``document`` query's ``sections`` are Sections, ...) and the edges are those the query walked: Document
-HAS_SECTION-> Section -HAS_CHUNK-> Chunk -HAS_QUESTION-> AtomicQuestion, Triple -EXTRACTED_FROM-> Chunk,
Chunk -MENTIONS-> Entity, Triple -SUBJECT|OBJECT-> Entity, Entity -RELATED- Entity; where a query gives no path,
``IN`` joins a chunk to the document its ``document_id`` names and ``CHANGED`` a run to the documents it wrote
(kbgraph.serve.explore_models.GraphEdge). :data:`VIEWS` names the queries the page offers as views.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kbgraph.serve.explore_models import GraphEdge, GraphNode

#: The longest caption drawn under a node, in characters.
CAPTION_CHARS = 120
#: Properties never sent: the vectors (hundreds of floats each).
HIDDEN = frozenset({"embedding", "pending_embedding"})
#: The properties a node's caption is taken from, by label, first present wins (else its id).
CAPTIONS: dict[str, tuple[str, ...]] = {
    "Document": ("title", "uri"),
    "Section": ("title", "path"),
    "Chunk": ("summary", "text"),
    "AtomicQuestion": ("text",),
    "Triple": ("text",),
    "Entity": ("name",),
    "Tag": ("norm", "name"),
    "TagClass": ("name",),
    "Question": ("text",),
    "SubQuestion": ("text",),
    "IngestionRun": ("started_at",),
}

Row = Mapping[str, Any]


def properties(value: Mapping[str, Any] | None) -> dict[str, Any]:
    """A node's stored properties without vectors and without nulls (``{.*, embedding: null}`` projections)."""
    return {k: v for k, v in (value or {}).items() if k not in HIDDEN and v is not None}


def caption(label: str, props: Mapping[str, Any]) -> str:
    """A node's short text: its first of :data:`CAPTIONS` for ``label`` (an IngestionRun: its start and status),
    one line, at most :data:`CAPTION_CHARS` characters; its id when it has none."""
    text = next((str(props[k]) for k in CAPTIONS.get(label, ("name", "title", "text")) if props.get(k)), "")
    if label == "IngestionRun" and text:
        text = f"run {text} ({props.get('status', '?')})"
    text = " ".join((text or str(props.get("id", ""))).split())
    return text if len(text) <= CAPTION_CHARS else text[: CAPTION_CHARS - 1] + "…"


def graph_node(label: str, value: Mapping[str, Any]) -> GraphNode:
    """The GraphNode of a node of ``label`` whose properties are ``value`` (which holds its ``id``)."""
    props = properties(value)
    return GraphNode(id=str(props.get("id", "")), label=label, caption=caption(label, props), properties=props)


class GraphBuilder:
    """Nodes (each once, in the order first added) and edges (each once) of a graph."""

    def __init__(self) -> None:
        self.nodes: dict[str, GraphNode] = {}
        self.edges: dict[tuple[str, str, str], GraphEdge] = {}

    def node(self, label: str, value: Mapping[str, Any] | None) -> str | None:
        """Add the node (a property dict with an ``id``; None or one without: nothing); returns its id."""
        if not value or not value.get("id"):
            return None
        found = graph_node(label, value)
        self.nodes.setdefault(found.id, found)
        return found.id

    def nodes_of(self, label: str, values: Iterable[Mapping[str, Any] | None] | None) -> list[str]:
        return [i for i in (self.node(label, v) for v in values or []) if i]

    def edge(self, source: str | None, target: str | None, type_: str) -> None:
        if source and target and source != target:
            self.edges.setdefault((source, type_, target), GraphEdge(source=source, target=target, type=type_))


def _top_entities(g: GraphBuilder, rows: Sequence[Row]) -> None:
    for row in rows:
        entity = dict(row.get("entity") or {})
        entity.update({k: row[k] for k in ("mentions", "related", "degree") if row.get(k) is not None})
        g.node("Entity", entity)


def _document(g: GraphBuilder, rows: Sequence[Row]) -> None:
    for row in rows:
        parent = g.node("Document", row.get("document"))
        for section in g.nodes_of("Section", row.get("sections")):
            g.edge(parent, section, "HAS_SECTION")
            parent = section
        chunk = g.node("Chunk", row.get("chunk"))
        g.edge(parent, chunk, "HAS_CHUNK")
        for question in g.nodes_of("AtomicQuestion", row.get("questions")):
            g.edge(chunk, question, "HAS_QUESTION")
        for triple in g.nodes_of("Triple", row.get("triples")):
            g.edge(triple, chunk, "EXTRACTED_FROM")
        for entity in g.nodes_of("Entity", row.get("entities")):
            g.edge(chunk, entity, "MENTIONS")


def _entity(g: GraphBuilder, rows: Sequence[Row]) -> None:
    for row in rows:
        value = dict(row.get("entity") or {})
        if row.get("mentions") is not None:
            value["mentions"] = row["mentions"]
        entity = g.node("Entity", value)
        for other in g.nodes_of("Entity", row.get("neighbours")):
            g.edge(entity, other, "RELATED")
        for triple in row.get("triples") or []:
            tid = g.node("Triple", triple)
            g.edge(tid, entity, "OBJECT" if triple.get("object_id") == entity else "SUBJECT")
        g.nodes_of("Document", row.get("documents"))
        for chunk in row.get("chunks") or []:
            cid = g.node("Chunk", chunk)
            g.edge(cid, entity, "MENTIONS")
            doc = chunk.get("document_id")
            g.edge(cid, doc if doc in g.nodes else None, "IN")


def _orphans(g: GraphBuilder, rows: Sequence[Row]) -> None:
    for row in rows:
        g.node(str(row.get("label") or "Node"), row.get("node") or {"id": row.get("id")})


def _changed(g: GraphBuilder, rows: Sequence[Row]) -> None:
    for row in rows:
        run = g.node("IngestionRun", row.get("run"))
        for doc in g.nodes_of("Document", row.get("documents")):
            g.edge(run, doc, "CHANGED")


#: The browse queries offered as views: name -> what turns its rows into a graph.
VIEWS: dict[str, Callable[[GraphBuilder, Sequence[Row]], None]] = {
    "top_entities": _top_entities,
    "document": _document,
    "entity": _entity,
    "orphans": _orphans,
    "changed": _changed,
}


def view_graph(view: str, rows: Sequence[Row]) -> tuple[list[GraphNode], list[GraphEdge]]:
    """The nodes and edges of the rows of browse query ``view`` (one of :data:`VIEWS`; KeyError otherwise)."""
    g = GraphBuilder()
    VIEWS[view](g, rows)
    return list(g.nodes.values()), list(g.edges.values())
