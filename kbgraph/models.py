"""Pydantic records that cross a boundary: parser -> chunker -> distiller -> embedder -> graph writer,
and the store's answers. Node records mirror the graph schema of docs/architecture.md (PIKE-RAG §3.1, §5.1.2,
Fig. 3): information-resource layer (Document, Section), corpus layer (Chunk), distilled-knowledge layer
(AtomicQuestion, Triple, Entity).

Ids are stable and content-derived (see ``stable_id``) so that re-ingesting the same content yields the
same nodes. ``embedding`` is a list of float32-representable floats, L2-normalised, of the configured
dimension (384 for all-MiniLM-L6-v2), or None before the embed stage.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, Field

#: The node labels of the three-layer graph that carry a vector index on ``embedding`` (Tag: auto-tagging, §5.2.2).
VECTOR_LABELS: tuple[str, ...] = ("Document", "Section", "Chunk", "AtomicQuestion", "Triple", "Entity", "Tag")
#: Labels of saved rationales (``kbgraph ask --save``, kbgraph.query.rationale).
RATIONALE_LABELS: tuple[str, ...] = ("Question", "SubQuestion")
#: Every node label kbgraph writes (each has a uniqueness constraint on ``id``).
NODE_LABELS: tuple[str, ...] = VECTOR_LABELS + ("IngestionRun",) + RATIONALE_LABELS + ("TagClass",)
#: Every relationship type kbgraph writes.
RELATIONSHIP_TYPES: tuple[str, ...] = (
    "HAS_SECTION",
    "HAS_CHUNK",
    "NEXT",
    "HAS_QUESTION",
    "EXTRACTED_FROM",
    "SUBJECT",
    "OBJECT",
    "RELATED",
    "MENTIONS",
    "REFERENCES",
    "USED",  # saved rationales: (:Question)-[:USED {round, score}]->(:Chunk)
    "PROPOSED",  # (:Question)-[:PROPOSED]->(:SubQuestion)
    "MATCHED",  # (:SubQuestion)-[:MATCHED {score}]->(:AtomicQuestion)
    "TAGGED",  # auto-tagging (PIKE-RAG §5.2.2, kbgraph.ingest.autotag): (:Chunk)-[:TAGGED]->(:Tag {side: 'corpus'})
)
#: The Document properties kbgraph writes for itself (ingest/upsert_document, mark_documents_complete): never a
#: user's metadata key (one is refused at ingest), and not filterable (kbgraph.query.filters) but for ``title``.
RESERVED_DOCUMENT_PROPERTIES: frozenset[str] = frozenset(
    {
        "id",
        "uri",
        "title",
        "title_alternatives",
        "mime",
        "sha256",
        "ingested_at",
        "summary",
        "ocr",
        "ocr_pages",
        "embedding",
        "pending_embedding",
        "status",
        "metadata_keys",
        "file_metadata",
    }
)
#: The metadata every Document carries when it can be known (issue 58), filterable like the user's own keys:
#: ``folder`` the source file's folder relative to the ingested root, posix, ending in '/' ('' at the root: so
#: ``folder^=hr/`` holds hr/ and its subfolders); ``path`` the relative posix path; ``file_type`` the lower-case
#: extension without its dot ('pdf'); ``title``; ``author``; ``created`` and ``modified``, ISO 8601 UTC text
#: ('2021-03-04T05:06:07Z', so that ``created>=2021`` compares as text); ``language``, ISO 639-1 ('en').
STANDARD_METADATA_KEYS: tuple[str, ...] = (
    "folder",
    "path",
    "file_type",
    "title",
    "author",
    "created",
    "modified",
    "language",
)
#: A metadata value as a Document property holds it (a date is ISO 8601 text).
MetadataValue = str | int | float | bool | list[str]
#: Full-text indexes: (label, property).
FULLTEXT_INDEXES: tuple[tuple[str, str], ...] = (
    ("Chunk", "text"),
    ("Entity", "name"),
    ("Document", "title"),
    ("Tag", "norm"),
)


def stable_id(prefix: str, *parts: str) -> str:
    """A deterministic id ``<prefix>:<24 hex>`` from the sha256 of the parts (joined by U+001F)."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:24]
    return f"{prefix}:{digest}"


class DocumentRecord(BaseModel):
    """A source document. ``ocr``: some of its text was read by OCR (a scan, an image), on ``ocr_pages``.
    ``title_alternatives``: the file's other usable titles (metadata, first-page heading, file name;
    kbgraph.ingest.titles), named with the title in the Document layer's text (:attr:`label`)."""

    id: str
    uri: str
    title: str
    title_alternatives: list[str] = Field(default_factory=list)
    mime: str
    sha256: str
    ingested_at: str | None = None
    summary: str | None = None
    ocr: bool = False
    ocr_pages: list[int] = Field(default_factory=list)
    embedding: list[float] | None = None
    #: its metadata (issue 58; kbgraph.ingest.metadata): the standard keys (``STANDARD_METADATA_KEYS`` but ``title``,
    #: which is ``title``) it has and the user's own, written as top-level properties and listed in ``metadata_keys``
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    #: JSON of what the file itself gave (its properties and front matter) and the title the user gave it, from
    #: which a re-ingest of the unchanged file merges its metadata anew (``kbgraph.ingest.refresh``)
    file_metadata: str | None = None

    @property
    def label(self) -> str:
        """The title and its alternatives, ``"title — alternative — ..."``: the text the Document layer embeds."""
        return " — ".join([self.title, *self.title_alternatives])


class SectionRecord(BaseModel):
    """A heading-delimited part of a document. ``parent_id`` is the parent Section's id, or the Document's
    id for a top-level section. ``path`` is the heading path, e.g. 'Chapter 2 > Duties'."""

    id: str
    document_id: str
    parent_id: str
    title: str
    level: int
    path: str
    order: int
    embedding: list[float] | None = None


class ChunkRecord(BaseModel):
    """A retrievable piece of text. ``parent_id``: the Section (or Document) that HAS_CHUNK it.
    ``order``: position in the document's reading order (NEXT edges follow it). ``page``: 1-based page
    number for paged formats, else None. For ``kind='table'``, ``text`` is a Markdown table and
    ``summary`` describes it. ``ocr_confidence``: Tesseract's mean word confidence (0..100) on the chunk's page
    when that page was read by OCR and Tesseract gave one, else None."""

    id: str
    document_id: str
    parent_id: str
    text: str
    kind: Literal["text", "table", "figure"] = "text"
    summary: str | None = None
    page: int | None = None
    order: int
    section_path: str = ""
    ocr_confidence: float | None = None
    embedding: list[float] | None = None


class AtomicQuestionRecord(BaseModel):
    """Knowledge atomizing (PIKE-RAG §5.3.1; paper 003 §3.1): a question the chunk answers, or with no LLM a
    sentence of the chunk used as an atomic tag (``kind='sentence'``, paper 003 Table 13)."""

    id: str
    chunk_id: str
    text: str
    kind: Literal["question", "sentence"] = "question"
    embedding: list[float] | None = None


class EntityRecord(BaseModel):
    """A named thing, merged across chunks and documents by normalised name and type."""

    id: str
    name: str
    type: str
    embedding: list[float] | None = None


class TripleRecord(BaseModel):
    """(subject, predicate, object) extracted from a chunk; subject/object link to Entities by id."""

    id: str
    chunk_id: str
    subject: str
    predicate: str
    object: str
    subject_id: str
    object_id: str
    text: str
    embedding: list[float] | None = None


class MentionRecord(BaseModel):
    chunk_id: str
    entity_id: str


class DocumentGraph(BaseModel):
    """Everything one document contributes to the graph; written in one unit of work."""

    document: DocumentRecord
    sections: list[SectionRecord] = Field(default_factory=list)
    chunks: list[ChunkRecord] = Field(default_factory=list)
    questions: list[AtomicQuestionRecord] = Field(default_factory=list)
    entities: list[EntityRecord] = Field(default_factory=list)
    triples: list[TripleRecord] = Field(default_factory=list)
    mentions: list[MentionRecord] = Field(default_factory=list)


# --- store answers ---------------------------------------------------------------------------


class VectorHit(BaseModel):
    """One vector-index hit. ``score``: cosine similarity in [-1, 1] (higher is closer), the same on
    both backends (Neo4j's (1+cos)/2 and FalkorDB's cosine distance are converted)."""

    id: str
    label: str
    score: float
    properties: dict = Field(default_factory=dict)


class FulltextHit(BaseModel):
    """One full-text hit. ``score``: the backend's relevance score (BM25-like; higher is better; not
    comparable across backends)."""

    id: str
    label: str
    score: float
    properties: dict = Field(default_factory=dict)


class StoreStats(BaseModel):
    backend: str
    location: str
    nodes: dict[str, int] = Field(default_factory=dict)
    relationships: dict[str, int] = Field(default_factory=dict)

    @property
    def total_nodes(self) -> int:
        return sum(self.nodes.values())
