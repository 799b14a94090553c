"""Request and response models of ``kbgraph serve`` (the OpenAPI schema at ``/docs``). Responses reuse the
library's records: ``Answer`` (PIKE-RAG §5.3, Algorithm 1), ``ScoredChunk`` (§5.2.3 score propagation),
``IngestReport`` (inside a Job), ``StoreStats``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, field_validator

from kbgraph.query.models import Answer, ScoredChunk
from kbgraph.query.rationale import SavedRationale
from kbgraph.serve.invalid import Text


def _filters() -> Any:
    """The ``filters`` field of ask and search (a new FieldInfo per model): a document filter, the JSON filter
    model of kbgraph.filters (docs/filters.md)."""
    return Field(
        None,
        description="Only the documents whose metadata this filter allows (docs/filters.md): a tree of "
        '{"op": "eq"|"in"|"range"|"prefix"|"exists", "key": ..., ...} leaves joined by {"op": "and"|"or", '
        '"filters": [...]} and {"op": "not", "filter": ...}, e.g. {"op": "prefix", "key": "folder", "value": '
        '"hr/"}. Within a document-scoped key\'s own documents. 400 naming an unknown key, a bad op or a value '
        "of another type.",
        json_schema_extra={
            "example": {
                "op": "and",
                "filters": [
                    {"op": "prefix", "key": "folder", "value": "hr/"},
                    {"op": "range", "key": "year", "gte": 2021},
                ],
            }
        },
    )


class AskRequest(BaseModel):
    """``method``: any method name ``KnowledgeBase.ask`` takes (None = its default: Algorithm 1 with an LLM,
    retrieval only without); an unknown one is a 400 naming the choices. ``k``: evidence chunks of a
    retrieval-only answer. ``save``: write the rationale into the graph (``saved`` in the response; needs the
    ``write`` right). ``filters``: the documents read (docs/filters.md). Text holds no lone surrogate (422)."""

    question: Text
    method: Text | None = None
    k: int = Field(5, ge=1, le=100)
    explain: bool = False
    save: bool = False
    filters: dict[str, Any] | None = _filters()
    stream: bool = Field(
        False,
        description="Answer with Server-Sent Events (delta, round, answer, done), as with `Accept: text/event-stream`.",
    )


class AskResponse(Answer):
    """The library's Answer, plus what ``save`` wrote (its Question id), if asked to save."""

    saved: SavedRationale | None = None


class SearchRequest(BaseModel):
    """Retrieval only: the top ``k`` chunks. ``method``: a retrieval method name of ``KnowledgeBase.retrieve``
    (None = its default). ``filters``: the documents read (docs/filters.md). Text holds no lone surrogate (422)."""

    question: Text
    method: Text | None = None
    k: int = Field(10, ge=1, le=200)
    explain: bool = False
    filters: dict[str, Any] | None = _filters()


class SearchResponse(BaseModel):
    question: str
    method: str | None = None
    chunks: list[ScoredChunk]


class IngestRequest(BaseModel):
    """Files, folders or .jsonl corpora on the server's file system. ``prune``: delete documents whose source
    vanished; ``wait``: wait for another process's ingestion lock instead of failing (as ``kbgraph ingest``).
    (Uploaded files come as ``multipart/form-data`` instead: kbgraph.serve.uploads.)"""

    paths: list[Text] = Field(min_length=1, max_length=1000)
    prune: bool = False
    wait: bool = False

    @field_validator("paths")
    @classmethod
    def _plain_paths(cls, paths: list[str]) -> list[str]:
        for p in paths:
            if not p.strip() or "\x00" in p:
                raise ValueError("a path is empty or holds a NUL character")
        return paths


class DocumentInfo(BaseModel):
    """A document of the knowledge base (``KnowledgeBase.documents``); ``metadata``: its metadata keys and
    values (issue 58), what filters name."""

    id: str
    title: str | None = None
    uri: str | None = None
    mime: str | None = None
    status: str | None = None
    ingested_at: str | None = None
    chunks: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)


class DocumentList(BaseModel):
    kb: str
    documents: list[DocumentInfo]


class Deleted(BaseModel):
    """Nodes removed per kind (documents, chunks, entities, ...)."""

    kb: str
    document: str
    deleted: dict[str, int]


class ChunkInfo(BaseModel):
    """A chunk with its provenance (``KnowledgeBase.chunk``)."""

    id: str
    text: str | None = None
    summary: str | None = None
    kind: str | None = None
    page: int | None = None
    section_path: str | None = None
    section_id: str | None = None
    document_id: str | None = None
    document_title: str | None = None
    document_uri: str | None = None


class BrowseRows(BaseModel):
    """The rows of a ready browse query (nodes as property dicts without embeddings)."""

    kb: str
    query: str
    rows: list[dict[str, Any]]


class Ready(BaseModel):
    """``/readyz``: the embedder is loaded and the served knowledge base's store answered, when it exists
    (``exists`` false: no ingest made it yet, and it was not opened). ``kb``, ``exists``, ``backend``, ``store``
    and ``open`` only for an unrestricted caller (kbgraph.serve.access.unrestricted)."""

    status: str
    embedder: str
    kb: str | None = None
    exists: bool | None = None
    backend: str | None = None
    store: str | None = None
    open: list[str] | None = None
