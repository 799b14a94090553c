"""Ingestion stage 2: a ParsedDocument -> Document, Section tree and Chunks (PIKE-RAG §5.1.2 Fig. 3: the
information-resource and corpus layers; §5.2.1 text splitting without the LLM part).

- **Sections** come from heading levels: a heading opens a Section under the nearest enclosing heading of
  a smaller level (or under the Document), ``path`` is the heading path 'A > B', and its id
  ``stable_id('sec', document_id, path, order)`` is stable while the document's headings do not change.
- **Chunks** never cross a section or a table. The text between two headings (or a heading and a table)
  is one chunk when it has at most ``chunk_tokens`` whitespace tokens, else it is cut into sentences with
  spaCy's ``senter`` (no parser; one ``nlp.pipe`` call per document) and packed greedily into chunks of at
  most ``chunk_tokens`` tokens, each repeating the previous chunk's last ``overlap_sentences`` sentences.
  A single sentence longer than ``chunk_tokens`` is cut into windows of ``chunk_tokens`` tokens. Paragraph
  breaks are kept as blank lines.
- **Tables** are one chunk each, ``kind='table'``, text = the Markdown, ``summary`` from
  ``kbgraph.ingest.tables.summarize_table`` (deterministic), or with an LLM ``llm_summarize_table``.
- ``order`` numbers chunks in reading order across the whole document (NEXT edges follow it); ``page`` is
  the page of the chunk's first new sentence; ``section_path`` the enclosing section's path ('' at the
  document level). A passage (JSONL corpus) has no headings: its chunks hang directly off the Document.
- Ids: ``stable_id('doc', uri)``, and ``stable_id('chunk', document_id, order, sha256(text))``.

With an ``llm`` (and ``llm_split``), blocks too long for one chunk are split by the recurrent LLM splitter
of §5.2.1 (Figure 5) instead of the greedy packing: same sentence units, chunks without overlap, each with
the model's summary (``kbgraph.ingest.chunk_llm``). Without an LLM nothing here calls one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kbgraph.ingest.chunk_units import Unit as _Unit
from kbgraph.ingest.chunk_units import render as _render
from kbgraph.ingest.parse import ParsedDocument
from kbgraph.ingest.tables import summarize_table
from kbgraph.models import ChunkRecord, DocumentRecord, SectionRecord, stable_id
from kbgraph.ingest.chunk_llm import llm_chunk_stage
from kbgraph.ingest import nlp
from kbgraph.llm.base import LLM

if TYPE_CHECKING:
    from kbgraph.ingest.chunk_llm import SplitChunk

PATH_SEP = " > "


@dataclass
class _Block:
    """Consecutive content of one section: paragraphs, or one table."""

    parent_id: str
    path: str
    paragraphs: list[tuple[str, int | None]] | None = None
    table: tuple[str, int | None] | None = None


def _ntokens(text: str) -> int:
    return len(text.split())


def _windows(text: str, size: int) -> list[str]:
    words = text.split()
    return [" ".join(words[i : i + size]) for i in range(0, len(words), size)]


def _pack(units: list[_Unit], chunk_tokens: int, overlap: int) -> list[tuple[str, int | None]]:
    """Greedy packing of sentence units into chunks of <= chunk_tokens with ``overlap`` sentences repeated."""
    chunks: list[tuple[str, int | None]] = []
    cur: list[_Unit] = []
    fresh = 0  # index in cur of the first sentence not repeated from the previous chunk
    size = 0
    for u in units:
        if cur and size + u.tokens > chunk_tokens:
            chunks.append((_render(cur), cur[fresh].page))
            keep = cur[-overlap:] if overlap > 0 else []
            while keep and sum(k.tokens for k in keep) + u.tokens > chunk_tokens:
                keep = keep[1:]
            cur, fresh, size = list(keep), len(keep), sum(k.tokens for k in keep)
        cur.append(u)
        size += u.tokens
    if cur and fresh < len(cur):
        chunks.append((_render(cur), cur[fresh].page))
    return chunks


def _block_units(b: _Block, sents: list[list[str]], chunk_tokens: int) -> list[_Unit]:
    """The sentence units of a long block: its sentences, over-long ones cut into ``chunk_tokens`` windows."""
    assert b.paragraphs is not None
    units: list[_Unit] = []
    for i, ((_, page), para_sents) in enumerate(zip(b.paragraphs, sents)):
        for s in para_sents:
            n = _ntokens(s)
            if n > chunk_tokens:
                units += [_Unit(w, page, i, _ntokens(w)) for w in _windows(s, chunk_tokens)]
            elif n:
                units.append(_Unit(s, page, i, n))
    return units


def build_structure(
    doc: ParsedDocument,
    *,
    chunk_tokens: int = 256,
    overlap_sentences: int = 1,
    llm: LLM | None = None,
    llm_split: bool = True,
    llm_window_tokens: int = 768,
    llm_workers: int = 4,
) -> tuple[DocumentRecord, list[SectionRecord], list[ChunkRecord]]:
    """The Document, its Section tree and its Chunks, in reading order (see the module docstring).

    ``llm``: None (offline), or an object with ``complete_json(messages, schema)``: then table summaries
    are the LLM's and, with ``llm_split``, long blocks are split by the recurrent LLM splitter with windows
    of ``llm_window_tokens`` words, ``llm_workers`` requests in flight. Raises LLMError if the LLM server
    fails (an unusable answer falls back to the offline rule instead)."""
    if chunk_tokens < 1:
        raise ValueError("chunk_tokens must be >= 1")
    overlap_sentences = max(0, overlap_sentences)
    document = _document_record(doc)
    sections, blocks = _sections_and_blocks(doc, document.id)  # 1. sections and blocks
    sentences = _long_block_sentences(blocks, chunk_tokens)  # 2. sentences of the blocks too long for one chunk
    # 2b. With an LLM: recurrent split of the long blocks and table summaries (PIKE-RAG §5.2.1, §5.1.2).
    llm_chunks: dict[int, list[SplitChunk]] = {}
    table_summaries: dict[int, str] = {}
    if llm is not None:
        long_blocks = [b for b in blocks if id(b) in sentences]
        splits = (
            {id(b): (_block_units(b, sentences[id(b)], chunk_tokens), b.path) for b in long_blocks} if llm_split else {}
        )
        tables = {id(b): (b.table[0], b.path) for b in blocks if b.table is not None and b.table[0].strip()}
        llm_chunks, table_summaries = llm_chunk_stage(
            llm,
            splits,
            tables,
            title=doc.title,
            chunk_tokens=chunk_tokens,
            window_tokens=llm_window_tokens,
            workers=llm_workers,
        )
    # 3. Chunks in reading order.
    chunks = _Chunks(document.id, dict(getattr(doc, "ocr_confidence", {}) or {}))
    for b in blocks:
        if b.table is not None:
            md, page = b.table
            summary = table_summaries.get(id(b)) or summarize_table(md)
            chunks.add(b.parent_id, b.path, md, page, kind="table", summary=summary)
            continue
        assert b.paragraphs is not None
        if id(b) not in sentences:  # fits in one chunk
            text = "\n\n".join(t.strip() for t, _ in b.paragraphs if t.strip())
            chunks.add(b.parent_id, b.path, text, next((p for t, p in b.paragraphs if t.strip()), None))
        elif id(b) in llm_chunks:
            for c in llm_chunks[id(b)]:
                chunks.add(b.parent_id, b.path, c.text, c.page, summary=c.summary)
        else:
            for text, page in _pack(_block_units(b, sentences[id(b)], chunk_tokens), chunk_tokens, overlap_sentences):
                chunks.add(b.parent_id, b.path, text, page)
    if not chunks.records and sections:  # a document of headings only: keep them findable
        chunks.add(document.id, "", "\n".join(s.title for s in sections), next((e.page for e in doc.elements), None))
    return document, sections, chunks.records


def _document_record(doc: ParsedDocument) -> DocumentRecord:
    """The Document of ``doc`` (id ``stable_id('doc', uri)``; OCR pages, titles and metadata as parsed)."""
    ocr_pages = list(getattr(doc, "ocr_pages", []) or [])
    return DocumentRecord(
        id=stable_id("doc", doc.uri),
        uri=doc.uri,
        title=doc.title,
        mime=doc.mime,
        sha256=doc.sha256,
        ocr=bool(ocr_pages),
        ocr_pages=ocr_pages,
        title_alternatives=list(doc.title_alternatives),
        metadata=dict(doc.metadata),
        file_metadata=doc.file_metadata,
    )


def _sections_and_blocks(doc: ParsedDocument, document_id: str) -> tuple[list[SectionRecord], list[_Block]]:
    """The Section tree of ``doc``'s headings (in order) and its blocks: consecutive paragraphs of one section, or
    one table each."""
    sections: list[SectionRecord] = []
    stack: list[SectionRecord] = []
    blocks: list[_Block] = []

    def here() -> tuple[str, str]:
        return (stack[-1].id, stack[-1].path) if stack else (document_id, "")

    for el in doc.elements:
        if el.kind == "heading":
            level = el.level or 1
            while stack and stack[-1].level >= level:
                stack.pop()
            parent_id, parent_path = here()
            path = f"{parent_path}{PATH_SEP}{el.text}" if parent_path else el.text
            order = len(sections)
            sec = SectionRecord(
                id=stable_id("sec", document_id, path, str(order)),
                document_id=document_id,
                parent_id=parent_id,
                title=el.text,
                level=level,
                path=path,
                order=order,
            )
            sections.append(sec)
            stack.append(sec)
        elif el.kind == "table":
            parent_id, path = here()
            blocks.append(_Block(parent_id, path, table=(el.markdown or el.text, el.page)))
        elif el.text.strip():
            parent_id, path = here()
            last = blocks[-1] if blocks else None
            if last is not None and last.paragraphs is not None and last.parent_id == parent_id:
                last.paragraphs.append((el.text, el.page))
            else:
                blocks.append(_Block(parent_id, path, paragraphs=[(el.text, el.page)]))
    return sections, blocks


def _long_block_sentences(blocks: list[_Block], chunk_tokens: int) -> dict[int, list[list[str]]]:
    """{id(block): its paragraphs' sentences} of the blocks too long for one chunk (one spaCy pass for all)."""
    long_blocks = [
        b for b in blocks if b.paragraphs is not None and sum(_ntokens(t) for t, _ in b.paragraphs) > chunk_tokens
    ]
    sentences: dict[int, list[list[str]]] = {}
    if long_blocks:
        texts = [t for b in long_blocks for t, _ in b.paragraphs or ()]  # (long blocks have paragraphs)
        split = list(nlp.split_sentences(texts))
        k = 0
        for b in long_blocks:
            n = len(b.paragraphs or ())
            sentences[id(b)] = split[k : k + n]
            k += n
    return sentences


@dataclass
class _Chunks:
    """The chunks of one document, numbered in reading order as they are added (empty texts left out)."""

    document_id: str
    ocr_confidence: dict[int, float]
    records: list[ChunkRecord] = field(default_factory=list)

    def add(
        self, parent_id: str, path: str, text: str, page: int | None, kind: str = "text", summary: str | None = None
    ) -> None:
        if not text.strip():
            return
        order = len(self.records)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        self.records.append(
            ChunkRecord(
                id=stable_id("chunk", self.document_id, str(order), digest),
                document_id=self.document_id,
                parent_id=parent_id,
                text=text,
                kind=kind,
                summary=summary,
                page=page,
                order=order,
                section_path=path,
                ocr_confidence=self.ocr_confidence.get(page) if page is not None else None,
            )
        )
