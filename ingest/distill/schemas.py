"""What distill asks an LLM for and accepts back (paper 003 A.7; PIKE-RAG §5.3.1).

Distill calls ``complete_json`` of an LLM client (``kbgraph.llm.base.LLM``). ``AtomicQuestions`` is the answer
to the atomic-question tagging prompt (paper 003 Appendix A.7: one fact a question), ``ExtractedKnowledge`` the
answer to kbgraph's entity and triple extraction prompt (``kbgraph.ingest.prompts``). Each schema is sent as
the response format, so a constrained decoder writes within its bounds; validators repair what models
commonly get slightly wrong (a line-per-question string, an unknown entity type, an over-long list) rather
than failing the whole answer.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, Field, field_validator

from kbgraph.llm.bounds import MaxChars, answer_schema

from kbgraph.ingest import prompts
from kbgraph.ingest.distill.names import CONCEPT_TYPE, SPACE, TITLE_TYPE

#: An atomic question longer than this is not atomic (paper 003: one fact a question).
MAX_QUESTION_CHARS = 160
#: Longest entity name, entity type, and triple end or predicate kept (characters; a longer one is cut).
MAX_NAME_CHARS = 60
MAX_TYPE_CHARS = 24
MAX_PREDICATE_CHARS = 40
#: Most atomic questions, entities or triples kept from one chunk's LLM answer. kbgraph's cap, not the papers':
#: PIKE-RAG §5.3.1 and paper 003 A.7 ask for questions "as many as possible", unbounded; 16 bounds what a small
#: model that repeats list items writes (docs/methods.md, "Departures").
MAX_ITEMS = 16
#: One atomic question in the response format: 1 to MAX_QUESTION_CHARS - 1 characters, then '?'. No '"', '\\'
#: or newline: llama.cpp turns a pattern into grammar over the raw JSON text, not the decoded string, so
#: ``[^\n]`` would let a constrained decoder write an unescaped '"' (invalid JSON the server then refuses with
#: a 500, "does not match the expected peg-native format": 6 of 20 SmolLM2-135M answers did). ``_clean`` turns
#: a '"' in an unconstrained model's question into "'" and drops backslashes, so the pattern never refuses one.
QUESTION_PATTERN = rf'^[^"\\\n]{{1,{MAX_QUESTION_CHARS - 1}}}\?$'

_ITEM_MARK = re.compile(r"^\s*(?:[-*•]|\(?\d{1,3}[.)]|Q\d*[:.])\s*")


@answer_schema
class AtomicQuestions(BaseModel):
    """LLM answer to the atomic question tagging prompt."""

    # Each item is a question (paper 003 A.7): the schema sent as response_format says so (a constrained
    # decoder cannot then write a statement); items without the final '?' or over MAX_QUESTION_CHARS are
    # dropped by _clean rather than failing the whole answer. The pattern bounds the length itself: llama.cpp's
    # grammar follows a pattern and ignores maxLength beside it.
    questions: list[Annotated[str, Field(pattern=QUESTION_PATTERN, max_length=MAX_QUESTION_CHARS)]] = Field(
        default_factory=list, max_length=MAX_ITEMS
    )

    @field_validator("questions", mode="before")
    @classmethod
    def _clean(cls, v: Any) -> Any:
        # Some models answer line by line as the paper's original prompt asked.
        items = v.splitlines() if isinstance(v, str) else v
        if not isinstance(items, list):
            return items
        out: list[str] = []
        seen: set[str] = set()
        for q in items:
            if not isinstance(q, str):
                continue
            q = _ITEM_MARK.sub("", q).replace('"', "'").replace("\\", "").strip()
            if q.endswith("?") and "\n" not in q and len(q) <= MAX_QUESTION_CHARS and q.casefold() not in seen:
                seen.add(q.casefold())
                out.append(q)
        return out[:MAX_ITEMS]


class ExtractedEntity(BaseModel):
    """One entity of an extraction answer: its name (whitespace collapsed) and one of
    ``prompts.ENTITY_TYPES`` or TITLE (anything else becomes CONCEPT)."""

    name: Annotated[str, MaxChars(MAX_NAME_CHARS)]
    type: Annotated[str, MaxChars(MAX_TYPE_CHARS)] = CONCEPT_TYPE

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return SPACE.sub(" ", v).strip()

    @field_validator("type")
    @classmethod
    def _type(cls, v: str) -> str:
        t = SPACE.sub("_", v.strip()).upper()
        return t if t in prompts.ENTITY_TYPES or t == TITLE_TYPE else CONCEPT_TYPE


class ExtractedTriple(BaseModel):
    """One subject-predicate-object triple of an extraction answer (whitespace collapsed)."""

    subject: Annotated[str, MaxChars(MAX_NAME_CHARS)]
    predicate: Annotated[str, MaxChars(MAX_PREDICATE_CHARS)]
    object: Annotated[str, MaxChars(MAX_NAME_CHARS)]

    @field_validator("subject", "predicate", "object")
    @classmethod
    def _strip(cls, v: str) -> str:
        return SPACE.sub(" ", v).strip()


@answer_schema
class ExtractedKnowledge(BaseModel):
    """LLM answer to the triple extraction prompt."""

    # maxItems in the schema bounds what a constrained decoder writes; a longer list is cut, not refused
    entities: list[ExtractedEntity] = Field(default_factory=list, max_length=MAX_ITEMS)
    triples: list[ExtractedTriple] = Field(default_factory=list, max_length=MAX_ITEMS)

    @field_validator("entities", "triples", mode="before")
    @classmethod
    def _bounded(cls, v: Any) -> Any:
        return v[:MAX_ITEMS] if isinstance(v, list) else v


__all__ = [
    "MAX_ITEMS",
    "MAX_QUESTION_CHARS",
    "QUESTION_PATTERN",
    "AtomicQuestions",
    "ExtractedEntity",
    "ExtractedKnowledge",
    "ExtractedTriple",
]
