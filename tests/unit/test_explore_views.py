"""The browse rows as the Explore page's graphs (kbgraph.serve.explore_views): labels from the columns, the edges the
queries walked (sections in a chain, SUBJECT or OBJECT by the triple's ids, IN to a chunk's document), each node
and edge once, no vector sent, captions cut."""

from __future__ import annotations

from kbgraph.browse import CATALOGUE
from typing import Any

from kbgraph.serve.explore_models import GraphEdge
from kbgraph.serve.explore_views import CAPTION_CHARS, VIEWS, caption, graph_node, view_graph


def _edges(edges: list[GraphEdge]) -> set[tuple[str, str, str]]:
    return {(e.source, e.type, e.target) for e in edges}


def test_document_view_chains_sections_and_dedups() -> None:
    doc = {"id": "doc:1", "title": "Report", "embedding": [0.1, 0.2], "pending_embedding": None}
    sec1, sec2 = {"id": "sec:1", "title": "Intro"}, {"id": "sec:2", "title": "Numbers"}
    rows: list[dict[str, Any]] = [
        {
            "document": doc,
            "sections": [sec1, sec2],
            "chunk": {"id": "chunk:1", "text": "a" * 500},
            "questions": [{"id": "aq:1", "text": "How many?"}],
            "triples": [{"id": "tri:1", "text": "x is y"}],
            "entities": [{"id": "ent:1", "name": "Kentucky"}],
        },
        {
            "document": doc,
            "sections": [sec1],
            "chunk": {"id": "chunk:2", "summary": "Table"},
            "questions": [],
            "triples": [],
            "entities": [{"id": "ent:1", "name": "Kentucky"}],
        },
    ]
    nodes, edges = view_graph("document", rows)
    assert [(n.id, n.label) for n in nodes] == [
        ("doc:1", "Document"),
        ("sec:1", "Section"),
        ("sec:2", "Section"),
        ("chunk:1", "Chunk"),
        ("aq:1", "AtomicQuestion"),
        ("tri:1", "Triple"),
        ("ent:1", "Entity"),
        ("chunk:2", "Chunk"),
    ]
    assert _edges(edges) == {
        ("doc:1", "HAS_SECTION", "sec:1"),
        ("sec:1", "HAS_SECTION", "sec:2"),
        ("sec:2", "HAS_CHUNK", "chunk:1"),
        ("chunk:1", "HAS_QUESTION", "aq:1"),
        ("tri:1", "EXTRACTED_FROM", "chunk:1"),
        ("chunk:1", "MENTIONS", "ent:1"),
        ("sec:1", "HAS_CHUNK", "chunk:2"),
        ("chunk:2", "MENTIONS", "ent:1"),
    }
    assert len(edges) == 8  # each once
    assert nodes[0].properties == {"id": "doc:1", "title": "Report"}  # no vector, no null
    chunk = nodes[3]
    assert len(chunk.caption) == CAPTION_CHARS and chunk.caption.endswith("…")
    assert chunk.properties["text"] == "a" * 500  # the panel gets it whole


def test_entity_view_subject_object_and_documents() -> None:
    row: dict[str, Any] = {
        "entity": {"id": "ent:k", "name": "Kentucky"},
        "mentions": 2,
        "neighbours": [{"id": "ent:l", "name": "Louisville"}, None],
        "triples": [
            {"id": "tri:1", "subject_id": "ent:k", "object_id": "ent:x"},
            {"id": "tri:2", "subject_id": "ent:l", "object_id": "ent:k"},
        ],
        "chunks": [{"id": "chunk:1", "document_id": "doc:1"}, {"id": "chunk:2", "document_id": "doc:gone"}],
        "documents": [{"id": "doc:1", "title": "Report"}],
    }
    nodes, edges = view_graph("entity", [row])
    assert nodes[0].properties["mentions"] == 2
    assert _edges(edges) == {
        ("ent:k", "RELATED", "ent:l"),
        ("tri:1", "SUBJECT", "ent:k"),
        ("tri:2", "OBJECT", "ent:k"),
        ("chunk:1", "MENTIONS", "ent:k"),
        ("chunk:2", "MENTIONS", "ent:k"),
        ("chunk:1", "IN", "doc:1"),
    }


def test_other_views_and_captions() -> None:
    top, none = view_graph(
        "top_entities", [{"entity": {"id": "ent:1", "name": "x"}, "mentions": 3, "related": 1, "degree": 4}]
    )
    assert top[0].properties == {"id": "ent:1", "name": "x", "mentions": 3, "related": 1, "degree": 4} and not none
    orphans, _ = view_graph("orphans", [{"label": "Chunk", "id": "chunk:9", "node": {"id": "chunk:9", "text": "t"}}])
    assert [(n.id, n.label) for n in orphans] == [("chunk:9", "Chunk")]
    changed, edges = view_graph(
        "changed",
        [
            {
                "run": {"id": "run:1", "started_at": "2026-01-01T00:00:00Z", "status": "completed"},
                "documents": [{"id": "doc:1"}],
            }
        ],
    )
    assert changed[0].caption == "run 2026-01-01T00:00:00Z (completed)" and _edges(edges) == {
        ("run:1", "CHANGED", "doc:1")
    }
    assert caption("Entity", {"id": "ent:1"}) == "ent:1"  # no name: its id
    assert caption("Chunk", {"id": "c", "text": "two\n\nlines"}) == "two lines"
    assert graph_node("Tag", {"id": "tag:1", "norm": "gun"}).caption == "gun"
    assert set(VIEWS) <= set(CATALOGUE)  # every view is a browse query
