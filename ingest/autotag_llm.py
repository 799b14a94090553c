"""The LLM half of auto-tagging, corpus side (PIKE-RAG §5.2.2): the calls.

``propose_classes`` asks for the tag classes of a sample of chunks (prompt ``TAG_CLASSES``, JSON
``{"tag_classes": [{"name", "description"}]}``); ``extract_tags`` asks for one chunk's tags of those classes
(prompt ``CHUNK_TAGS``, JSON ``{"tags": [{"name", "class"}]}``); ``ask_chunks`` runs ``extract_tags`` over many
chunks, ``workers`` requests in flight, and stops early when the server keeps failing. Prompts and answer
schemas: ``kbgraph.tagging``. The graph side (Tag nodes, TAGGED edges) is ``kbgraph.ingest.autotag``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import BaseModel, Field

from kbgraph.errors import LLMError
from kbgraph.tagging import (
    MAX_TAG_CLASSES,
    MAX_TAGS_PER_CHUNK,
    ChunkTags,
    TagClassProposal,
    chunk_tags_messages,
    clean_text,
    tag_classes_messages,
)
from kbgraph.text import one_line
from kbgraph.llm.base import LLM

log = logging.getLogger("kbgraph.ingest.autotag")

#: Characters of a chunk the tag prompt reads, and of each sampled chunk the class proposal reads.
CHUNK_CHARS = 6000
SAMPLE_CHARS = 1200
#: Consecutive failed requests (the server failing, not an unusable answer) after which the rest of the chunks
#: are not asked: an unreachable server would otherwise cost every chunk its retries and timeout.
MAX_FAILURES_IN_A_ROW = 8


def chunk_content(row: dict[str, Any]) -> str:
    """What the tag prompt reads of a chunk row (``tags/chunk_contents``): ``Title: ...`` then its text (a table
    after its summary, a figure without text as its summary), at most ``CHUNK_CHARS`` characters."""
    text = clean_text(row.get("text"))
    summary = clean_text(row.get("summary"))
    kind = row.get("kind")
    if kind == "table" and summary:
        text = f"{summary}\n\n{text}".strip()
    elif not text:
        text = summary
    title = clean_text(row.get("title"))
    content = f"Title: {title}\nContent: {text}" if title else text
    return content[:CHUNK_CHARS]


def propose_classes(llm: LLM, passages: Sequence[str]) -> list[tuple[str, str]]:
    """The tag classes the LLM proposes for ``passages`` (each cut to ``SAMPLE_CHARS``): (name, description),
    at most ``MAX_TAG_CLASSES``, empty names dropped. Raises LLMError (server failure, or no valid JSON after
    the one repair request)."""
    messages = tag_classes_messages([p[:SAMPLE_CHARS] for p in passages], MAX_TAG_CLASSES)
    answer = llm.complete_json(messages, TagClassProposal)
    if not isinstance(answer, TagClassProposal):
        answer = TagClassProposal.model_validate(answer.model_dump() if isinstance(answer, BaseModel) else answer)
    out = [(c.name, c.description) for c in answer.tag_classes if c.name]
    return out[:MAX_TAG_CLASSES]


def extract_tags(llm: LLM, content: str, classes: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """One chunk's tags as the LLM names them: (name, class as answered), at most ``MAX_TAGS_PER_CHUNK``, empty
    names dropped (the caller keeps those of known classes). Raises LLMError as ``propose_classes``."""
    answer = llm.complete_json(chunk_tags_messages(content, classes, MAX_TAGS_PER_CHUNK), ChunkTags)
    if not isinstance(answer, ChunkTags):
        answer = ChunkTags.model_validate(answer.model_dump() if isinstance(answer, BaseModel) else answer)
    return [(t.name, t.class_) for t in answer.tags if t.name][:MAX_TAGS_PER_CHUNK]


class Asked(BaseModel):
    """What ``ask_chunks`` got: ``answers`` {chunk id: [(name, class)]} of the chunks whose request answered,
    ``errors`` {chunk id: one line} of those whose request failed, ``failures_in_a_row``: consecutive failed
    requests at its end (carried over from the call before)."""

    answers: dict[str, list[tuple[str, str]]] = Field(default_factory=dict)
    errors: dict[str, str] = Field(default_factory=dict)
    failures_in_a_row: int = 0

    @property
    def give_up(self) -> bool:
        """``MAX_FAILURES_IN_A_ROW`` requests failed in a row: ask no more chunks in this run."""
        return self.failures_in_a_row >= MAX_FAILURES_IN_A_ROW


def ask_chunks(
    llm: LLM,
    contents: Sequence[tuple[str, str]],
    classes: Sequence[tuple[str, str]],
    *,
    workers: int,
    failures_in_a_row: int = 0,
) -> Asked:
    """``extract_tags`` for each (chunk id, content) of ``contents`` (one batch), ``workers`` at a time. A
    request that fails (LLMError: the server failed or the answer was not valid JSON even after the repair) is
    recorded in ``errors`` and the others go on. ``failures_in_a_row``: consecutive failures carried over from
    the previous batch (the caller asks no further batch once ``Asked.give_up``)."""
    asked = Asked(failures_in_a_row=failures_in_a_row)

    def work(item: tuple[str, str]) -> tuple[str, list[tuple[str, str]] | None, str]:
        chunk_id, content = item
        try:
            return chunk_id, extract_tags(llm, content, classes), ""
        except (LLMError, ValueError, TypeError) as exc:
            return chunk_id, None, one_line(f"{type(exc).__name__}: {exc}", 500)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for chunk_id, tags, error in pool.map(work, contents):
            if tags is None:
                asked.errors[chunk_id] = error
                asked.failures_in_a_row += 1
                log.warning("tagging chunk %s failed: %s", chunk_id, error)
            else:
                asked.answers[chunk_id] = tags
                asked.failures_in_a_row = 0
    return asked


__all__ = [
    "CHUNK_CHARS",
    "MAX_FAILURES_IN_A_ROW",
    "Asked",
    "ask_chunks",
    "chunk_content",
    "extract_tags",
    "propose_classes",
]
