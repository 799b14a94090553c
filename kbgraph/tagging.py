"""The vocabulary of auto-tagging (PIKE-RAG §5.2.2), shared by its corpus side (kbgraph.ingest.autotag,
kbgraph.ingest.autotag_llm) and its query side (kbgraph.query.tags, kbgraph.eval.tag_pairs), which do not import
each other: what a tag is (``normalize_tag``, ``tag_id``, ``tag_class_id``, ``TagClass``, ``tag_classes``), the
schemas of the LLM's tagging answers and the tagging prompts.

Prompts: the paper prints no tagging prompt; these follow its words. TAG_CLASSES: "we leverage the capabilities
of the LLMs to identify key factors within the corpus chunks, summarize these factors, and generalize them into
category names, which we refer to as 'tag classes'". CHUNK_TAGS: "We generate semantic tag extraction prompts
based on these tag classes to facilitate accurate tag extraction ... to extract semantic tags from the corpus,
thereby forming a comprehensive corpus tag collection". Chunk texts and class names are values of
``str.format``, so braces or quotes in them are text, never template syntax. The query side's prompts
(question tags, tag pairs) are in their own section at the end.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, field_validator

from kbgraph.llm.bounds import answer_schema

from kbgraph.models import stable_id
from kbgraph.store import GraphStore


# --- what a tag is ----------------------------------------------------------------------------------------
#: Longest tag name kept (characters); a longer "tag" is a sentence, not a tag.
MAX_TAG_CHARS = 80
#: Characters stripped from both ends of a tag name by ``normalize_tag``.
_END_PUNCTUATION = ".,;:!?\"'`()[]{}<>«»“”‘’-–—_*~/\\|#"


def normalize_tag(name: str) -> str:
    """The normalised form of a tag name, shared by both sides of a tag pair: Unicode NFKC, case-folded,
    white space collapsed to one space, punctuation stripped at both ends ('  The  U.S. ' -> 'the u.s').
    May be '' (the name was punctuation only)."""
    text = " ".join(unicodedata.normalize("NFKC", name or "").casefold().split())
    return text.strip(_END_PUNCTUATION + " ")


def tag_id(norm: str, side: str = "corpus") -> str:
    """Id of the Tag of normalised name ``norm`` on ``side`` ('corpus' or 'query')."""
    return stable_id("tag", side, norm)


def tag_class_id(name: str) -> str:
    """Id of the TagClass named ``name`` (its normalised name: classes differing in case are one)."""
    return stable_id("tagclass", normalize_tag(name))


class TagClass(BaseModel):
    """A tag class of the knowledge base (§5.2.2): ``tags`` = corpus Tags of the class."""

    name: str
    description: str = ""
    tags: int = 0
    created_at: str | None = None


def tag_classes(store: GraphStore) -> list[TagClass]:
    """The knowledge base's tag classes, by name (empty before the first ingest with ``auto_tagging``)."""
    return [
        TagClass(
            name=r["name"], description=r["description"] or "", tags=int(r["tags"] or 0), created_at=r["created_at"]
        )
        for r in store.run("tags/classes")
        if r["name"]
    ]


# --- the LLM's tagging answers ---------------------------------------------------------------------------
#: Most tag classes kept from a proposal.
MAX_TAG_CLASSES = 12
#: Most tags kept from one chunk's answer (a runaway answer is cut).
MAX_TAGS_PER_CHUNK = 12
#: Longest tag or class name, and description, kept (characters).
MAX_NAME_CHARS = 80
MAX_DESCRIPTION_CHARS = 300


def clean_text(v: Any) -> str:
    """An answer's value as stripped text ('' for None; a number as its digits)."""
    return "" if v is None else (v if isinstance(v, str) else str(v)).strip()


class _Texts(BaseModel):
    """A model whose fields are texts: a number or null in the answer becomes text, stripped."""

    @field_validator("*", mode="before")
    @classmethod
    def _str(cls, v: Any, info: Any) -> str:
        limit = MAX_DESCRIPTION_CHARS if info.field_name == "description" else MAX_NAME_CHARS
        return clean_text(v)[:limit]


def _bounded(limit: int) -> Any:
    """A before-validator that cuts a list answer to ``limit`` items (a runaway answer is cut, not refused)."""
    return field_validator("*", mode="before")(lambda cls, v: v[:limit] if isinstance(v, list) else v)


# maxItems / maxLength in the schemas bound what a constrained decoder (response_format json_schema) writes: a
# small model otherwise lists tags until its token limit cuts the JSON. Longer values are cut, not refused.
class ProposedClass(_Texts):
    """One tag class of the proposal's answer."""

    name: str = Field("", max_length=MAX_NAME_CHARS)
    description: str = Field("", max_length=MAX_DESCRIPTION_CHARS)


@answer_schema
class TagClassProposal(BaseModel):
    """Answer of the tag class prompt: ``{"tag_classes": [{"name": ..., "description": ...}]}``."""

    tag_classes: list[ProposedClass] = Field(default_factory=list, max_length=MAX_TAG_CLASSES)
    _cut = _bounded(MAX_TAG_CLASSES)


class ExtractedChunkTag(_Texts):
    """One tag of the chunk tag prompt's answer."""

    name: str = Field("", max_length=MAX_NAME_CHARS)
    class_: str = Field("", alias="class", max_length=MAX_NAME_CHARS)

    model_config = {"populate_by_name": True}


@answer_schema
class ChunkTags(BaseModel):
    """Answer of the chunk tag prompt: ``{"tags": [{"name": ..., "class": ...}]}``."""

    tags: list[ExtractedChunkTag] = Field(default_factory=list, max_length=MAX_TAGS_PER_CHUNK)
    _cut = _bounded(MAX_TAGS_PER_CHUNK)


# --- auto-tagging, corpus side: prompts ---------------------------------------------------------------------
#: System prompt of both corpus-side tagging prompts.
SYSTEM_CORPUS_TAGGING = "You are a helpful AI assistant good at content understanding and semantic tagging."

#: §5.2.2 tag classes: the LLM reads a sample of chunks and names the categories of their key factors.
TAG_CLASSES = """# Task
Below are sample passages of a document collection. Identify the key factors in them (the things a reader
would search for: names, terms, concepts, quantities, ...), summarize these factors, and generalize them into
at most {max_classes} category names: the tag classes of this collection. Give each class a short name
(1 to 3 words) and a one-sentence description of what belongs to it.
# Output Format
Please output in following JSON format:
{{
    "tag_classes": [{{"name": <a class name>, "description": <what belongs to it>}}]
}}
# Passages
{passages}
# Your Output"""

#: §5.2.2 corpus tag collection: the semantic tags of one chunk, each of one of the tag classes.
CHUNK_TAGS = """# Task
Your task is to extract the semantic tags of the passage below: its key factors (names, terms, concepts), each
with the tag class it belongs to. Use only the tag classes listed; leave out what fits none of them. Keep each
tag short (1 to 4 words) and as written in the passage; at most {max_tags} tags.
# Tag Classes
{classes}
# Output Format
Please output in following JSON format:
{{
    "tags": [{{"name": <a tag>, "class": <its tag class>}}]
}}
# Passage
{content}
# Your Output"""


def tag_classes_messages(passages: Sequence[str], max_classes: int) -> list[dict[str, str]]:
    """Chat messages of the tag class proposal over ``passages`` (numbered ``[1] ...``)."""
    body = "\n\n".join(f"[{i}] {p}" for i, p in enumerate(passages, 1))
    return [
        {"role": "system", "content": SYSTEM_CORPUS_TAGGING},
        {"role": "user", "content": TAG_CLASSES.format(passages=body, max_classes=max_classes)},
    ]


def chunk_tags_messages(content: str, classes: Sequence[tuple[str, str]], max_tags: int) -> list[dict[str, str]]:
    """Chat messages of the tag extraction of one chunk's ``content``; ``classes``: (name, description)."""
    listed = "\n".join(f"- {name}: {description}" if description else f"- {name}" for name, description in classes)
    return [
        {"role": "system", "content": SYSTEM_CORPUS_TAGGING},
        {"role": "user", "content": CHUNK_TAGS.format(classes=listed, content=content, max_tags=max_tags)},
    ]


# --- auto-tagging, query side (PIKE-RAG §5.2.2; kbgraph.query.tags, kbgraph.eval.tag_pairs) ------------
# The paper prints no tagging prompt; these follow its words. QUESTION_TAGS: "Prior to the retrieval process,
# tags are extracted from the query" with "semantic tag extraction prompts based on these tag classes";
# TAG_PAIRS: "semantic tag extraction is performed on both the queries and the corresponding retrieved answer
# chunks. Using the tag sets extracted from the chunks and queries, LLMs are utilized to map cross-domain
# semantic tags and generate a tag pair collection". Tags and questions are values of str.format, so braces or
# quotes in them are text, never template syntax.

SYSTEM_TAGGING = "You are a helpful AI assistant good at extracting and matching semantic tags."

QUESTION_TAGS = """# Task
Your task is to extract the semantic tags of the question: the key factors it asks about or depends on
(names, terms, concepts), each with the tag class it belongs to. Use one of the tag classes below when one
fits, else an empty class. Keep each tag short (1 to 4 words), as written in the question.
# Tag Classes
{classes}
# Output Format
Please output in following JSON format:
{{
    "tags": [{{"name": <a tag>, "class": <its tag class, or "">}}]
}}
# Question
{question}
# Your Output"""

TAG_PAIRS = """# Task
A question was answered by passages whose semantic tags are listed below. Map each tag of the question to the
passage tags that name the same thing in the passages' own words, each with a score from 0 to 1: how surely
the two tags denote the same thing. Use the tags exactly as listed; leave out a question tag with no
counterpart.
# Question
{question}
# Question Tags
{question_tags}
# Passage Tags
{corpus_tags}
# Output Format
Please output in following JSON format:
{{
    "pairs": [{{"question_tag": <a question tag>, "corpus_tag": <a passage tag>, "score": <0 to 1>}}]
}}
# Your Output"""


def _tag_lines(tags: list[tuple[str, str]]) -> str:
    return "\n".join(f"- {name}" + (f" ({cls})" if cls else "") for name, cls in tags) or "(none)"


def question_tags_messages(question: str, classes: list[tuple[str, str]]) -> list[dict[str, str]]:
    """Messages of the question-tag prompt: ``classes`` as (name, description) pairs (none: free tags)."""
    listed = "\n".join(f"- {name}: {desc}" if desc else f"- {name}" for name, desc in classes) or "(none given)"
    user = QUESTION_TAGS.format(classes=listed, question=question)
    return [{"role": "system", "content": SYSTEM_TAGGING}, {"role": "user", "content": user}]


def tag_pairs_messages(
    question: str, question_tags: list[tuple[str, str]], corpus_tags: list[tuple[str, str]]
) -> list[dict[str, str]]:
    """Messages of the tag-pair prompt: the question, its tags and the gold chunks' tags as (name, class)."""
    user = TAG_PAIRS.format(
        question=question, question_tags=_tag_lines(question_tags), corpus_tags=_tag_lines(corpus_tags)
    )
    return [{"role": "system", "content": SYSTEM_TAGGING}, {"role": "user", "content": user}]
