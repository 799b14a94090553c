"""LLM knowledge atomizing: atomic questions, entities and triples of a chunk from the model
(PIKE-RAG §5.3.1 knowledge atomizing; paper 003 Appendix A.7, the atomic-question tagging prompt).

For each chunk two prompts (``kbgraph.ingest.prompts``): the paper's atomic-question tagging prompt
(``schemas.AtomicQuestions``) and kbgraph's entity and triple extraction prompt
(``schemas.ExtractedKnowledge``), run for several chunks at once on a thread pool. The atomic-question request is sent at
``atomizing_temperature`` (default 0.7: PIKE-RAG §6.1 and paper 003 A.3 use "a temperature setting of 0.7
specifically for the Knowledge Atomizing process"), the extraction request at the client's temperature
(``llm_temperature``, 0, as every JSON decision). At most ``schemas.MAX_ITEMS`` (16) questions are kept per
chunk: kbgraph's cap; the papers ask for "as many as possible". A chunk whose answer is
unusable (invalid JSON or schema) falls back to the offline extraction (``pool.distill_offline``); a failure
of the server itself (unreachable, 401, prompt over its context) raises ``LLMError``. Title mentions are
found by text match, as offline (``titles``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ValidationError

from kbgraph.errors import LLMError
from kbgraph.ingest import prompts
from kbgraph.ingest.distill.names import CONCEPT_TYPE, TITLE_TYPE, entity_id, normalize_name
from kbgraph.ingest.distill.pool import distill_offline
from kbgraph.ingest.distill.result import Accumulator
from kbgraph.ingest.distill.schemas import AtomicQuestions, ExtractedKnowledge
from kbgraph.ingest.distill.titles import TitleMatcher, title_mentions
from kbgraph.llm.base import LLM
from kbgraph.models import ChunkRecord, EntityRecord
from kbgraph.ingest.nlp import load_nlp

if TYPE_CHECKING:
    from spacy.language import Language

log = logging.getLogger("kbgraph.ingest.distill")

#: Temperature of the atomic-question request (knowledge atomizing): PIKE-RAG §6.1, paper 003 A.3.
ATOMIZING_TEMPERATURE = 0.7

M = TypeVar("M", bound=BaseModel)


def _validated(obj: object, schema: type[M]) -> M:
    if isinstance(obj, schema):
        return obj
    if isinstance(obj, BaseModel):
        obj = obj.model_dump()
    return schema.model_validate(obj)


def llm_chunk(
    llm: LLM,
    chunk: ChunkRecord,
    title: str | None,
    *,
    atomizing_temperature: float = ATOMIZING_TEMPERATURE,
) -> tuple[AtomicQuestions, ExtractedKnowledge]:
    """The model's atomic questions (asked at ``atomizing_temperature``) and extracted knowledge (at the client's
    temperature) of one chunk (a table as its summary and Markdown, a figure without text as its summary).
    Raises ``ValidationError`` or ``LLMError``."""
    content = chunk.text if chunk.kind != "table" else f"{chunk.summary or ''}\n\n{chunk.text}".strip()
    if chunk.kind == "figure" and not chunk.text.strip():
        content = chunk.summary or ""
    questions = _validated(
        llm.complete_json(
            prompts.atomic_question_messages(content, title), AtomicQuestions, temperature=atomizing_temperature
        ),
        AtomicQuestions,
    )
    knowledge = _validated(
        llm.complete_json(prompts.triple_extraction_messages(content, title), ExtractedKnowledge),
        ExtractedKnowledge,
    )
    return questions, knowledge


def map_llm_chunk(
    result: Accumulator,
    chunk: ChunkRecord,
    questions: AtomicQuestions,
    knowledge: ExtractedKnowledge,
    own: EntityRecord | None,
    title_ents: Mapping[str, EntityRecord],
) -> None:
    """Records of one chunk's LLM answers: its questions, its entities (one named like a corpus title is that
    TITLE entity), and triples whose ends resolve to an entity (an unknown end becomes a CONCEPT)."""
    for q in questions.questions:
        result.question(chunk.id, q, "question")
    by_key: dict[str, EntityRecord] = {}
    if own is not None:
        by_key[normalize_name(own.name)] = own
    for e in knowledge.entities:
        if not e.name:
            continue
        key = normalize_name(e.name)
        # An entity named like a document title is that title's entity for triples (the second hop).
        title = title_ents.get(entity_id(e.name, TITLE_TYPE))
        if title is not None and e.type != "DATE":
            result.entities.setdefault(title.id, title)
            result.mention(chunk.id, title.id)
            by_key.setdefault(key, title)
        rec = result.entity(chunk.id, e.name, e.type)
        if rec is not None:
            by_key.setdefault(key, rec)
    for t in knowledge.triples:
        ends = []
        for name in (t.subject, t.object):
            rec = by_key.get(normalize_name(name)) or title_ents.get(entity_id(name, TITLE_TYPE))
            if rec is not None and rec.type == TITLE_TYPE:
                result.entities.setdefault(rec.id, rec)
                result.mention(chunk.id, rec.id)
            if rec is None:
                rec = result.entity(chunk.id, name, CONCEPT_TYPE)
                if rec is not None:
                    by_key[normalize_name(name)] = rec
            ends.append(rec)
        if ends[0] is None or ends[1] is None or not t.predicate:
            continue
        result.triple(chunk.id, t.subject, t.predicate.lower(), t.object, ends[0].id, ends[1].id)


def distill_llm(
    result: Accumulator,
    chunks: Sequence[ChunkRecord],
    llm: LLM,
    nlp: Language | None,
    titles: Mapping[str, str] | None,
    matcher: TitleMatcher | None,
    *,
    triples: bool,
    batch_size: int,
    llm_workers: int,
    atomizing_temperature: float = ATOMIZING_TEMPERATURE,
) -> None:
    """LLM extraction of ``chunks`` into ``result`` with ``llm_workers`` concurrent chunks, the atomic questions
    at ``atomizing_temperature``; chunks whose answers are unusable go to the offline extraction (``nlp``
    loaded then if None). Raises ``LLMError`` when the server fails."""

    def work(chunk: ChunkRecord) -> tuple[AtomicQuestions, ExtractedKnowledge] | None:
        title = titles.get(chunk.document_id) if titles else None
        try:
            return llm_chunk(llm, chunk, title, atomizing_temperature=atomizing_temperature)
        except (ValidationError, ValueError, TypeError, LLMError) as exc:
            if isinstance(exc, LLMError) and not isinstance(exc.__cause__, ValueError):
                raise  # the server failed (unreachable, 401, prompt over its context): not this answer
            log.warning("LLM distillation of chunk %s failed (%s); using the offline extraction", chunk.id, exc)
            return None

    with ThreadPoolExecutor(max_workers=max(1, llm_workers)) as pool:
        answers = list(pool.map(work, chunks))
    failed: list[ChunkRecord] = []
    title_ents = matcher.entities if matcher is not None else {}
    for chunk, answer in zip(chunks, answers):
        if answer is None:
            failed.append(chunk)
            continue
        own = result.own_title(chunk.id, titles.get(chunk.document_id) if titles else None)
        map_llm_chunk(result, chunk, answer[0], answer[1], own, title_ents)
    if matcher is not None:  # title mentions by text match, as offline
        assert nlp is not None  # distill() loads it whenever it builds a matcher
        for m in title_mentions([c for c, a in zip(chunks, answers) if a is not None], matcher, nlp):
            result.entities.setdefault(m.entity_id, matcher.entities[m.entity_id])
            result.mention(m.chunk_id, m.entity_id)
    if failed:
        if nlp is None:
            nlp = load_nlp()
        distill_offline(result, failed, nlp, titles, matcher, triples=triples, batch_size=batch_size, n_process=1)


__all__ = ["ATOMIZING_TEMPERATURE", "distill_llm", "llm_chunk", "map_llm_chunk"]
