"""What spaCy reads of a chunk, and a chunk's offline atomic tags (paper 003 Appendix A.5, Table 13).

Offline, every sentence of a chunk with at least ``MIN_SENTENCE_WORDS`` words is an atomic tag
(``kind='sentence'``), paper 003's cheap alternative to LLM-written atomic questions; a table chunk is tagged
with its summary and each of its rows (PIKE-RAG §5.2.2: a table is its summary and its content).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kbgraph.ingest.distill.result import Accumulator
from kbgraph.models import ChunkRecord

if TYPE_CHECKING:
    from spacy.tokens import Doc

#: A sentence needs at least this many alphabetic words to become an atomic tag.
MIN_SENTENCE_WORDS = 4

_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def table_rows(markdown: str) -> list[str]:
    """Each body row of a Markdown table as 'header: value; header: value' (or 'v1; v2' with no header)."""
    rows: list[list[str]] = []
    header: list[str] | None = None
    lines = [ln for ln in markdown.splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        if _TABLE_SEPARATOR.match(line):
            continue
        if "|" not in line:
            continue
        cells = [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(line.strip().strip("|"))]
        if header is None and i + 1 < len(lines) and _TABLE_SEPARATOR.match(lines[i + 1]):
            header = cells
            continue
        rows.append(cells)
    out = []
    for cells in rows:
        if not any(cells):
            continue
        if header and len(header) == len(cells):
            parts = [f"{h}: {v}" if h else v for h, v in zip(header, cells) if v]
        else:
            parts = [c for c in cells if c]
        out.append("; ".join(parts))
    return out


def chunk_text(chunk: ChunkRecord) -> str:
    """The prose spaCy reads for a chunk: a table's summary and rows, a figure's text or summary."""
    if chunk.kind == "table":
        parts = [chunk.summary or ""] + [r + "." for r in table_rows(chunk.text)]
        return "\n".join(p for p in parts if p.strip())
    if chunk.kind == "figure" and not chunk.text.strip():
        return chunk.summary or ""
    return chunk.text


def add_tags(result: Accumulator, chunk: ChunkRecord, doc: Doc) -> None:
    """Offline atomic tags of one chunk (``doc``: its spaCy Doc): its sentences, or for a table its summary
    and rows; a chunk with no sentence long enough is one tag."""
    if chunk.kind == "table":
        if chunk.summary and chunk.summary.strip():
            result.question(chunk.id, chunk.summary, "sentence")
        for row in table_rows(chunk.text):
            result.question(chunk.id, row, "sentence")
        return
    before = len(result.questions)
    if doc.has_annotation("SENT_START") or doc.has_annotation("DEP"):
        for sent in doc.sents:
            if sum(1 for t in sent if t.is_alpha) >= MIN_SENTENCE_WORDS:
                result.question(chunk.id, sent.text, "sentence")
    if len(result.questions) == before and any(t.is_alpha for t in doc):
        result.question(chunk.id, doc.text, "sentence")  # short chunk or no segmentation: one tag


__all__ = ["MIN_SENTENCE_WORDS", "add_tags", "chunk_text", "table_rows"]
