"""Auto-tagging at query time (PIKE-RAG §5.2.2, L1): "Prior to the retrieval process, tags are extracted from
the query and then mapped to corpus domain using the preprocessed tag collection or tag pair collection."

With an LLM and ``settings.tagging.auto_tagging`` on, :func:`question_tags` does, for one question:

1. extraction: the LLM names the question's tags (JSON ``{"tags": [{"name", "class"}]}``, prompt
   ``kbgraph.tagging.QUESTION_TAGS``), offered the tag classes of the graph's ``(:TagClass)`` nodes;
2. mapping through the tag pair collection: the query Tag of each tag (id ``stable_id('tag', 'query', norm)``,
   written by kbgraph.eval.tag_pairs) ``-[:MAPS_TO {score}]->`` corpus Tags, score = the edge's score;
3. mapping through the corpus tag collection: the ``tag_vector_k`` nearest corpus Tags of each tag's
   embedding on the Tag vector index with cosine >= ``tag_threshold``, score = that cosine.

A corpus tag reached both ways keeps its best score. The mapped tags seed retrieval: the Tag layer of score
propagation (kbgraph.query.propagation.propagate: ``w_G · max score`` over a chunk's TAGGED tags) and, when
``tag_rewrite``, the full-text query (the question followed by the mapped tags' names: "query rewriting or
keyword retrieval", §5.2.2). Without an LLM, with ``auto_tagging`` off, or when no weight would use the tags,
nothing is asked and retrieval is exactly that of §5.2.3.

Tag names are normalised and Tags identified as on the corpus side (kbgraph.ingest.autotag: ``normalize_tag``,
``tag_id``), so both sides of a pair agree. Statements: ``cypher/tags/classes``, ``cypher/tags/maps_to_lookup``,
``cypher/retrieve/seed_tags``.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, Field, field_validator

from kbgraph.errors import LLMError
from kbgraph.llm.base import LLM, usable_json
from kbgraph.llm.bounds import answer_schema
from kbgraph.query.context import QueryContext
from kbgraph.query.graph import as_vector, text_of
from kbgraph.settings import Settings
from kbgraph.store import GraphStore
from kbgraph.tagging import ChunkTags, normalize_tag, question_tags_messages, tag_classes, tag_id

log = logging.getLogger(__name__)

#: Most tags kept from one extraction (a runaway answer is cut).
MAX_TAGS = 12


@answer_schema
class TagExtraction(ChunkTags):
    """Answer of the question-tag prompt: the shape of the chunk tag prompt's answer
    (kbgraph.tagging.ChunkTags, ``{"tags": [{"name": ..., "class": ...}]}``, with its bounds), bare
    strings accepted as tags without a class."""

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, v: Any) -> list[Any]:
        items = v if isinstance(v, list) else [] if v is None else [v]
        return [{"name": x} if not isinstance(x, dict) else x for x in items]


class QuestionTag(BaseModel):
    """A tag of a question: its text, class, normalised form and query-side Tag id."""

    name: str
    tag_class: str = ""
    norm: str
    id: str


class MappedTag(BaseModel):
    """A corpus Tag a question tag maps to: ``score`` in [0, 1] (MAPS_TO score or cosine), ``via`` the
    question tag's name, ``how`` 'maps_to' or 'vector' (of the best score)."""

    id: str
    name: str
    score: float
    via: str
    how: str


class TagMapping(BaseModel):
    """The question's tags and the corpus tags they map to, best first."""

    question_tags: list[QuestionTag] = Field(default_factory=list)
    mapped: list[MappedTag] = Field(default_factory=list)

    def seed_layer(self) -> dict[str, tuple[float, str]]:
        """The Tag layer of ``Seeds.layers``: corpus tag id -> (score, name)."""
        return {m.id: (m.score, m.name) for m in self.mapped}

    def rewrite(self, question: str) -> str:
        """The full-text query: ``question`` followed by the mapped tags' names not already in it."""
        lower = question.casefold()
        extra = [m.name for m in self.mapped if m.name and m.name.casefold() not in lower]
        return " ".join([question, *dict.fromkeys(extra)])


def question_tag(name: str, tag_class: str = "") -> QuestionTag | None:
    """The query-side tag of ``name`` (None when it normalises to nothing)."""
    norm = normalize_tag(name)
    if not norm:
        return None
    return QuestionTag(name=" ".join(name.split()), tag_class=tag_class, norm=norm, id=tag_id(norm, "query"))


def class_pairs(store: GraphStore) -> list[tuple[str, str]]:
    """The knowledge base's tag classes (kbgraph.ingest.autotag) as (name, description), by name."""
    return [(c.name, c.description) for c in tag_classes(store)]


def extract_question_tags(llm: LLM, question: str, classes: list[tuple[str, str]]) -> list[QuestionTag]:
    """The question's tags by the LLM (at most MAX_TAGS, distinct by norm); [] when the answer is not valid
    JSON even after the repair request. Server errors (LLMError) propagate."""
    answer, _why = usable_json(llm, question_tags_messages(question, classes), TagExtraction)
    out: dict[str, QuestionTag] = {}
    for t in answer.tags if answer else []:
        tag = question_tag(t.name, t.class_)
        if tag is not None and tag.norm not in out:
            out[tag.norm] = tag
    return list(out.values())[:MAX_TAGS]


def tags_wanted(settings: Settings, llm: LLM | None) -> bool:
    """Whether a question is tagged: an LLM, ``auto_tagging`` on and a weight that would use the tags."""
    used = settings.retrieval.weight_tag or (
        settings.tagging.tag_rewrite and settings.retrieval.weight_fulltext and settings.retrieval.fulltext_k
    )
    return bool(llm is not None and settings.tagging.auto_tagging and used)


def map_tags(ctx: QueryContext, tags: list[QuestionTag]) -> list[MappedTag]:
    """The corpus tags ``tags`` map to through MAPS_TO and the Tag vector index (module doc), best first."""
    best: dict[str, MappedTag] = {}

    def keep(m: MappedTag) -> None:
        if m.score > 0 and (m.id not in best or m.score > best[m.id].score):
            best[m.id] = m

    if not tags:
        return []
    by_id = {t.id: t for t in tags}
    for row in ctx.store.run("tags/maps_to_lookup", {"query_ids": list(by_id)}):
        score = min(1.0, max(0.0, float(row["score"] or 0.0)))
        keep(
            MappedTag(
                id=row["id"], name=text_of(row["name"]), score=score, via=by_id[row["query_id"]].name, how="maps_to"
            )
        )
    settings = ctx.settings
    if settings.tagging.tag_vector_k:
        vectors = ctx.embedder.embed([t.name for t in tags])
        params = {
            "tags": [{"norm": t.norm, "embedding": as_vector(v)} for t, v in zip(tags, vectors, strict=True)],
            "k": settings.tagging.tag_vector_k,
        }
        by_norm = {t.norm: t for t in tags}
        for row in ctx.store.run("retrieve/seed_tags", params):
            sim = float(row["similarity"])
            if sim >= settings.tagging.tag_threshold:
                keep(
                    MappedTag(
                        id=row["id"],
                        name=text_of(row["name"]),
                        score=min(1.0, sim),
                        via=by_norm[row["query_norm"]].name,
                        how="vector",
                    )
                )
    return sorted(best.values(), key=lambda m: (-m.score, m.id))


def question_tags(question: str, ctx: QueryContext) -> TagMapping | None:
    """The question's tags and their mapped corpus tags, or None when tagging is off (:func:`tags_wanted`) or
    the LLM server fails (logged; retrieval then runs without tags)."""
    llm = ctx.llm
    if llm is None or not tags_wanted(ctx.settings, llm):
        return None
    try:
        tags = extract_question_tags(llm, question, class_pairs(ctx.store))
    except LLMError as exc:
        log.warning("auto-tagging skipped: %s", exc)
        return None
    return TagMapping(question_tags=tags, mapped=map_tags(ctx, tags))
