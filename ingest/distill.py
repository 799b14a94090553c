"""Stage 3 of ingestion: distill chunks into the distilled-knowledge layer (PIKE-RAG §5.3.1).

For every chunk: atomic tags (``AtomicQuestion`` nodes), entities (merged across chunks and documents by
normalised name and type), subject-predicate-object triples, and ``MENTIONS`` of every entity in the chunk.

Two modes:

* **Offline** (``llm=None``, the default): paper 003's cheap alternative (Appendix A.5, Table 13): every
  sentence of a chunk (spaCy segmentation, at least ``MIN_SENTENCE_WORDS`` words) is an atomic tag
  (``kind='sentence'``); a table chunk is tagged with its summary and each of its rows. Entities come from
  spaCy NER (numbers, money, percentages, quantities and clock times are dropped; dates are kept, see
  ``KEPT_LABELS``); triples from dependency subject-verb-object patterns, their ends mapped to the NER (or
  title) spans they fall in, else to noun chunks that become ``CONCEPT`` entities.
* **LLM** (``llm`` given, any object with ``complete_json(messages, schema)``): atomic questions with the
  paper's tagging prompt, entities and triples with kbgraph's extraction prompt (``ingest/prompts.py``).
  A chunk whose LLM output is unusable falls back to the offline extraction.

Titles. For passage corpora (Wikipedia-style: one titled passage per document) the title is the key entity:
``distill(..., titles={document_id: title})`` adds a ``TITLE`` entity per document, mentioned by that
document's chunks, and links every chunk that names one of the given titles in its text to that title's
entity. Two passages are then two hops apart in the graph (chunk -> TITLE entity <- chunk) exactly when
one names the other's subject, which is the second hop of a multi-hop question. ``link_title_mentions``
does the linking alone, for titles that arrive after a chunk was distilled.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import re
import threading
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field, ValidationError, field_validator

from kbgraph.errors import LLMError
from kbgraph.ingest import prompts
from kbgraph.models import (
    AtomicQuestionRecord,
    ChunkRecord,
    EntityRecord,
    MentionRecord,
    TripleRecord,
    stable_id,
)

log = logging.getLogger(__name__)

#: A sentence needs at least this many alphabetic words to become an atomic tag.
MIN_SENTENCE_WORDS = 4
#: spaCy NER labels kept as entities. Dropped: CARDINAL, ORDINAL, PERCENT, QUANTITY, MONEY (numbers link
#: unrelated passages through values like "two") and TIME ("night", "3 pm"). DATE is kept for questions
#: about when something happened, but only with a digit in it ("1951", "6 December 1951"; not "later").
KEPT_LABELS = frozenset(
    {"PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE", "DATE"}
)
TITLE_TYPE = "TITLE"
CONCEPT_TYPE = "CONCEPT"
#: Longest noun chunk (in words) accepted as a CONCEPT entity.
MAX_CONCEPT_WORDS = 6
#: Pipes needed with and without triples (whichever exist in the loaded pipeline are used).
# The attribute ruler and lemmatizer are left out: they cost 27% of the parse time on 2Wiki passages, and
# distill needs coarse POS (set from the tagger's tags, see _tag_to_pos) and lemmas of predicate verbs only.
PIPES_WITH_TRIPLES = ("tok2vec", "tagger", "parser", "ner")
PIPES_WITHOUT_TRIPLES = ("senter", "ner")  # in en_core_web_sm both have their own embedding layer
#: Below this many chunks a second spaCy process costs more than it saves.
MULTIPROCESS_MIN_CHUNKS = 400

_PERSONAL_PRONOUNS = frozenset({"he", "she", "him", "her"})
_THING_PRONOUNS = frozenset({"it"})
_BE_FORMS = frozenset({"be", "is", "are", "was", "were", "been", "being", "am", "'s", "'re", "'m"})
_BASE_FORM_TAGS = frozenset({"VB", "VBP", "NN", "NNP", "JJ", "MD"})
_INDEFINITE_PRONOUNS = frozenset({
    "something", "anything", "nothing", "everything", "someone", "anyone", "everyone", "nobody", "somebody",
    "anybody", "everybody",
})
_RELATIVE_PRONOUNS = frozenset({"who", "which", "that", "whom", "whose"})
_MONTHS = {
    m: i
    for i, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
            ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
            ("october", "oct"), ("november", "nov"), ("december", "dec"),
        ),
        start=1,
    )
    for m in names
}
_MONTH_RE = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DMY = re.compile(rf"^(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_RE}\s*,?\s*(\d{{3,4}})$")
_MDY = re.compile(rf"^{_MONTH_RE}\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:\s*,\s*|\s+)(\d{{3,4}})$")
_MY = re.compile(rf"^{_MONTH_RE}\s*,?\s*(\d{{3,4}})$")
_PUNCT = re.compile(r"[^\w\s]+")
_SPACE = re.compile(r"\s+")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_ITEM_MARK = re.compile(r"^\s*(?:[-*•]|\(?\d{1,3}[.)]|Q\d*[:.])\s*")
#: An atomic question longer than this is not atomic (paper 003: one fact a question).
MAX_QUESTION_CHARS = 300
#: Most atomic questions, entities or triples kept from one chunk's LLM answer.
MAX_ITEMS = 16


# --- the LLM interface distill needs ---------------------------------------------------------------------

M = TypeVar("M", bound=BaseModel)


@runtime_checkable
class JSONCompleter(Protocol):
    """What distill needs from an LLM client: chat messages in, an instance of ``schema`` out."""

    def complete_json(self, messages: list[dict[str, str]], schema: type[M]) -> M: ...


class AtomicQuestions(BaseModel):
    """LLM answer to the atomic question tagging prompt."""

    # Each item is a question (paper 003 A.7): the schema sent as response_format says so (a constrained
    # decoder cannot then write a statement); items without the final '?' or over MAX_QUESTION_CHARS are
    # dropped by _clean rather than failing the whole answer.
    questions: list[Annotated[str, Field(pattern=r"^[^\n]*\?$", max_length=MAX_QUESTION_CHARS)]] = Field(
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
            q = _ITEM_MARK.sub("", q).strip()
            if q.endswith("?") and len(q) <= MAX_QUESTION_CHARS and q.casefold() not in seen:
                seen.add(q.casefold())
                out.append(q)
        return out[:MAX_ITEMS]


class ExtractedEntity(BaseModel):
    name: str
    type: str = CONCEPT_TYPE

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _SPACE.sub(" ", v).strip()

    @field_validator("type")
    @classmethod
    def _type(cls, v: str) -> str:
        t = _SPACE.sub("_", v.strip()).upper()
        return t if t in prompts.ENTITY_TYPES or t == TITLE_TYPE else CONCEPT_TYPE


class ExtractedTriple(BaseModel):
    subject: str
    predicate: str
    object: str

    @field_validator("subject", "predicate", "object")
    @classmethod
    def _strip(cls, v: str) -> str:
        return _SPACE.sub(" ", v).strip()


class ExtractedKnowledge(BaseModel):
    """LLM answer to the triple extraction prompt."""

    # maxItems in the schema bounds what a constrained decoder writes; a longer list is cut, not refused
    entities: list[ExtractedEntity] = Field(default_factory=list, max_length=MAX_ITEMS)
    triples: list[ExtractedTriple] = Field(default_factory=list, max_length=MAX_ITEMS)

    @field_validator("entities", "triples", mode="before")
    @classmethod
    def _bounded(cls, v: Any) -> Any:
        return v[:MAX_ITEMS] if isinstance(v, list) else v


# --- names and ids -------------------------------------------------------------------------------------


def normalize_name(name: str) -> str:
    """The merge key of an entity name: NFKC, casefolded, apostrophes removed, other punctuation as
    spaces, whitespace collapsed, a leading 'the ' dropped. 'The Beatles' == 'beatles';
    "St. George's" == 'st georges'."""
    s = unicodedata.normalize("NFKC", name).casefold()
    s = s.replace("'", "").replace("’", "").replace("`", "")
    s = _SPACE.sub(" ", _PUNCT.sub(" ", s)).strip()
    if s.startswith("the "):
        s = s[4:]
    return s


def normalize_date(text: str) -> str | None:
    """ISO form (YYYY-MM-DD or YYYY-MM) of a full calendar date in a common English format, else None.
    '6 December 1951', 'December 6, 1951' and '6th of Dec. 1951' all give '1951-12-06'."""
    s = _SPACE.sub(" ", text.strip().casefold())
    if m := _DMY.match(s):
        day, month, year = int(m.group(1)), _MONTHS[m.group(2)], int(m.group(3))
    elif m := _MDY.match(s):
        month, day, year = _MONTHS[m.group(1)], int(m.group(2)), int(m.group(3))
    elif m := _MY.match(s):
        return f"{int(m.group(2)):04d}-{_MONTHS[m.group(1)]:02d}"
    else:
        return None
    if not 1 <= day <= 31:
        return None
    return f"{year:04d}-{month:02d}-{day:02d}"


def entity_key(name: str, type_: str) -> str:
    """The normalised name an entity merges on (dates in ISO form when they parse)."""
    if type_ == "DATE" and (iso := normalize_date(name)):
        return iso
    return normalize_name(name)


def entity_id(name: str, type_: str) -> str:
    """Stable id of the entity (name, type): ``stable_id('ent', normalised name, type)``."""
    return stable_id("ent", entity_key(name, type_), type_)


def title_entity(title: str) -> EntityRecord:
    """The TITLE entity of a document title."""
    return EntityRecord(id=entity_id(title, TITLE_TYPE), name=title.strip(), type=TITLE_TYPE)


def _clean_surface(text: str) -> str:
    text = _SPACE.sub(" ", text).strip()
    if text.lower().startswith("the ") and len(text) > 4 and text[:1] == "t":
        text = text[4:]
    for suffix in ("'s", "’s"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
    return text.strip(" ,;:-–(")


# --- title matching --------------------------------------------------------------------------------------


def _strip_disambiguator(title: str) -> str:
    """'Anthony Robinson (Unitarian)' -> 'Anthony Robinson' (Wikipedia's parenthetical disambiguator)."""
    return re.sub(r"\s*\([^()]*\)\s*$", "", title).strip()


class TitleMatcher:
    """Finds document titles in text: case-insensitive, on token boundaries, longest match first.

    Built once per corpus with a spaCy ``PhraseMatcher`` on lower-cased tokens (linear in the text, not in
    the number of titles). A title with a trailing parenthetical disambiguator, 'Anthony Robinson
    (Unitarian)', also matches as 'Anthony Robinson'. A match must keep a capital letter where the title
    has one (so the title 'Sleep' does not match 'sleep'); a one-word title must match with its exact case;
    a match followed by a capitalised word is the start of a longer name and is not a mention. A span that
    several titles share (two 'Anthony Robinson (...)' pages) names each of them.

    Measured on the shared sets (share of gold passages linked to another gold passage of the same question,
    cross-passage title mentions per passage): 2Wiki dev500 exact titles 0.710 / 0.33, with disambiguators
    stripped 0.789 / 0.55, plus the longer-name rule (default) 0.787 / 0.48; HotpotQA 0.67 -> 0.73;
    MuSiQue 0.27 either way. Matching 3,301 passages takes about 2 s (tokenizer only).
    """

    def __init__(self, nlp: Any, titles: Iterable[str], *, strip_disambiguators: bool = True,
                 reject_continued_names: bool = True):
        self.reject_continued_names = reject_continued_names
        from spacy.matcher import PhraseMatcher

        self._matcher = PhraseMatcher(nlp.vocab, attr="LOWER")
        self.entities: dict[str, EntityRecord] = {}
        patterns: dict[str, set[str]] = {}  # entity id -> pattern strings
        for title in titles:
            title = (title or "").strip()
            if not title:
                continue
            ent = title_entity(title)
            if not ent.id or len(normalize_name(title)) < 2:
                continue
            self.entities.setdefault(ent.id, ent)
            forms = {title}
            if strip_disambiguators:
                base = _strip_disambiguator(title)
                if base and base != title and len(normalize_name(base)) >= 2:
                    forms.add(base)
            patterns.setdefault(ent.id, set()).update(forms)
        self._exact_case: dict[str, set[str]] = {}
        self._lower_case: set[str] = set()  # titles with no capital letter at all
        for ent_id, form_set in patterns.items():
            forms = sorted(form_set)
            if not any(c.isupper() for c in self.entities[ent_id].name):
                self._lower_case.add(ent_id)
            docs = []
            for form, doc in zip(forms, nlp.tokenizer.pipe(forms)):
                if len(doc) == 0:
                    continue
                if len(doc) == 1:
                    if doc[0].is_stop or not any(c.isupper() for c in form):
                        continue  # a one-word lower-case or stop-word title would match everywhere
                    self._exact_case.setdefault(ent_id, set()).add(form)
                docs.append(doc)
            if docs:
                self._matcher.add(ent_id, docs)

    def __len__(self) -> int:
        return len(self.entities)

    def find(self, doc: Any) -> list[tuple[Any, list[str]]]:
        """Non-overlapping title spans of ``doc`` (longest first), each with the entity ids it names."""
        if not self.entities:
            return []
        by_span: dict[tuple[int, int], list[str]] = {}
        vocab_strings = doc.vocab.strings
        for match_id, start, end in self._matcher(doc):
            ent_id = vocab_strings[match_id]
            span = doc[start:end]
            if not self._case_ok(ent_id, span):
                continue
            ids = by_span.setdefault((start, end), [])
            if ent_id not in ids:
                ids.append(ent_id)
        if not by_span:
            return []
        # Longest spans win; a title inside a longer title is not a mention of it.
        ordered = sorted(by_span, key=lambda se: (-(se[1] - se[0]), se[0]))
        taken: set[int] = set()
        out = []
        for start, end in ordered:
            if any(i in taken for i in range(start, end)):
                continue
            taken.update(range(start, end))
            out.append((doc[start:end], by_span[(start, end)]))
        out.sort(key=lambda item: item[0].start)
        return out

    @staticmethod
    def _continues(span: Any) -> bool:
        """Whether a capitalised word follows the match, i.e. it is the start of a longer name
        ('Charles James' in 'Charles James Fox'). Measured on 2Wiki dev500: drops 13% of cross-passage
        title mentions and 0.2% of the links between gold passages."""
        doc = span.doc
        if span.end < len(doc) and span[-1].whitespace_:
            nxt = doc[span.end]
            return nxt.is_alpha and nxt.text[:1].isupper()
        return False

    def _case_ok(self, ent_id: str, span: Any) -> bool:
        if self.reject_continued_names and self._continues(span):
            return False
        text = span.text
        if len(span) == 1:
            return text in self._exact_case.get(ent_id, ())
        # The span must not be all lower case when the title has capitals (proper-name use).
        return ent_id in self._lower_case or any(c.isupper() for c in text)


def link_title_mentions(
    chunks: Sequence[ChunkRecord], titles: Mapping[str, str] | Iterable[str], nlp: Any = None
) -> list[MentionRecord]:
    """MENTIONS from each chunk to the TITLE entity of every title its text names.

    ``titles``: all titles of the corpus (a ``{document_id: title}`` mapping or an iterable of titles).
    Only the tokenizer runs (no model), so this is cheap to redo when new documents arrive. The TITLE
    entities themselves are ``title_entity(title)`` (written by the document that has the title)."""
    if nlp is None:
        nlp = _load_nlp()
    names = list(titles.values()) if isinstance(titles, Mapping) else list(titles)
    return _title_mentions(chunks, TitleMatcher(nlp, names), nlp)


def _title_mentions(chunks: Sequence[ChunkRecord], matcher: TitleMatcher, nlp: Any) -> list[MentionRecord]:
    if not len(matcher):
        return []
    out: list[MentionRecord] = []
    seen: set[tuple[str, str]] = set()
    texts = (_chunk_text(c) for c in chunks)
    for chunk, doc in zip(chunks, nlp.tokenizer.pipe(texts, batch_size=256)):
        for _span, ent_ids in matcher.find(doc):
            for ent_id in ent_ids:
                if (chunk.id, ent_id) not in seen:
                    seen.add((chunk.id, ent_id))
                    out.append(MentionRecord(chunk_id=chunk.id, entity_id=ent_id))
    return out


# --- per-chunk accumulation ------------------------------------------------------------------------------


@dataclass
class _Result:
    """What distill returns, accumulated with de-duplication, in first-seen order."""

    questions: dict[str, AtomicQuestionRecord] = field(default_factory=dict)
    entities: dict[str, EntityRecord] = field(default_factory=dict)
    triples: dict[str, TripleRecord] = field(default_factory=dict)
    mentions: dict[tuple[str, str], MentionRecord] = field(default_factory=dict)

    def question(self, chunk_id: str, text: str, kind: str) -> None:
        text = _SPACE.sub(" ", text).strip()
        if not text:
            return
        qid = stable_id("aq", chunk_id, text)
        if qid not in self.questions:
            self.questions[qid] = AtomicQuestionRecord(id=qid, chunk_id=chunk_id, text=text, kind=kind)

    def entity(self, chunk_id: str, name: str, type_: str) -> EntityRecord | None:
        name = _SPACE.sub(" ", name).strip()
        if not entity_key(name, type_):
            return None
        ent = EntityRecord(id=entity_id(name, type_), name=name, type=type_)
        ent = self.entities.setdefault(ent.id, ent)
        self.mention(chunk_id, ent.id)
        return ent

    def mention(self, chunk_id: str, ent_id: str) -> None:
        self.mentions.setdefault((chunk_id, ent_id), MentionRecord(chunk_id=chunk_id, entity_id=ent_id))

    def triple(self, chunk_id: str, s: str, p: str, o: str, s_id: str, o_id: str) -> None:
        if not (s and p and o) or s_id == o_id:
            return
        tid = stable_id("tri", chunk_id, s, p, o)
        if tid not in self.triples:
            self.triples[tid] = TripleRecord(
                id=tid, chunk_id=chunk_id, subject=s, predicate=p, object=o,
                subject_id=s_id, object_id=o_id, text=f"{s} {p} {o}",
            )

    def merge(self, other: _Result) -> None:
        for qid, q in other.questions.items():
            self.questions.setdefault(qid, q)
        for eid, e in other.entities.items():
            self.entities.setdefault(eid, e)
        for tid, t in other.triples.items():
            self.triples.setdefault(tid, t)
        for key, m in other.mentions.items():
            self.mentions.setdefault(key, m)

    def as_tuple(
        self,
    ) -> tuple[list[AtomicQuestionRecord], list[EntityRecord], list[TripleRecord], list[MentionRecord]]:
        return (
            list(self.questions.values()),
            list(self.entities.values()),
            list(self.triples.values()),
            list(self.mentions.values()),
        )


# --- table chunks ------------------------------------------------------------------------------------


def _table_rows(markdown: str) -> list[str]:
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


def _chunk_text(chunk: ChunkRecord) -> str:
    """The prose spaCy reads for a chunk: a table's summary and rows, a figure's text or summary."""
    if chunk.kind == "table":
        parts = [chunk.summary or ""] + [r + "." for r in _table_rows(chunk.text)]
        return "\n".join(p for p in parts if p.strip())
    if chunk.kind == "figure" and not chunk.text.strip():
        return chunk.summary or ""
    return chunk.text


def _add_tags(result: _Result, chunk: ChunkRecord, doc: Any) -> None:
    """Offline atomic tags of one chunk (paper 003 Table 13: sentences as atomic tags)."""
    if chunk.kind == "table":
        if chunk.summary and chunk.summary.strip():
            result.question(chunk.id, chunk.summary, "sentence")
        for row in _table_rows(chunk.text):
            result.question(chunk.id, row, "sentence")
        return
    before = len(result.questions)
    if doc.has_annotation("SENT_START") or doc.has_annotation("DEP"):
        for sent in doc.sents:
            if sum(1 for t in sent if t.is_alpha) >= MIN_SENTENCE_WORDS:
                result.question(chunk.id, sent.text, "sentence")
    if len(result.questions) == before and any(t.is_alpha for t in doc):
        result.question(chunk.id, doc.text, "sentence")  # short chunk or no segmentation: one tag


# --- offline extraction ------------------------------------------------------------------------------


class _ChunkExtractor:
    """Entities, triples and mentions of one parsed chunk."""

    def __init__(self, result: _Result, chunk: ChunkRecord, doc: Any, titles: list[tuple[Any, list[str]]],
                 title_entities: Mapping[str, EntityRecord], own_title: EntityRecord | None,
                 lemmatizer: Any = None):
        self.r = result
        self.lemmatizer = lemmatizer
        self.chunk = chunk
        self.doc = doc
        self.own_title = own_title
        self.title_entities = title_entities
        self.token_title: dict[int, tuple[Any, EntityRecord]] = {}
        for span, ent_ids in titles:
            # An ambiguous span (several titles share the form) names each; the first resolves triples.
            ents = [title_entities[i] for i in ent_ids if i in title_entities]
            if own_title is not None and own_title.id in ent_ids and own_title.id not in title_entities:
                ents.append(own_title)
            if own_title is not None and own_title.id in ent_ids:
                ents.sort(key=lambda e: e.id != own_title.id)
            for ent in ents:
                self.r.entities.setdefault(ent.id, ent)
                self.r.mention(chunk.id, ent.id)
            if ents:
                for i in range(span.start, span.end):
                    self.token_title[i] = (span, ents[0])
        self.token_ent: dict[int, tuple[Any, EntityRecord | None]] = {}
        self.first_person: list[tuple[int, EntityRecord]] = []
        for ent in doc.ents:
            record = self._ner_entity(ent)
            for i in range(ent.start, ent.end):
                self.token_ent[i] = (ent, record)
            if record is not None and ent.label_ == "PERSON":
                self.first_person.append((ent.start, record))

    def _ner_entity(self, ent: Any) -> EntityRecord | None:
        label = ent.label_
        if label not in KEPT_LABELS:
            return None
        name = _clean_surface(ent.text)
        if label == "DATE" and not any(c.isdigit() for c in name):
            return None
        if not any(c.isalnum() for c in name):
            return None
        return self.r.entity(self.chunk.id, name, label)

    # -- triples --
    def triples(self) -> None:
        doc = self.doc
        self.noun_chunk_of: dict[int, Any] = {}
        self.topic_nouns: set[str] = set()
        try:
            for nc in doc.noun_chunks:
                for i in range(nc.start, nc.end):
                    self.noun_chunk_of[i] = nc
        except ValueError:  # no parse
            return
        for verb in doc:
            if verb.pos_ not in ("VERB", "AUX"):
                continue
            if verb.pos_ == "AUX" and verb.dep_ in ("aux", "auxpass"):
                continue
            subjects, passive = self._subjects(verb)
            if not subjects:
                continue
            base = verb.text.lower() if passive else self._lemma(verb)
            prt = [c.text.lower() for c in verb.children if c.dep_ == "prt"]
            neg = any(c.dep_ == "neg" for c in verb.children)
            pred = " ".join((["not"] if neg else []) + [base] + prt)
            objects = list(self._objects(verb, pred))
            if not objects:
                continue
            for s_tok in subjects:
                s = self._resolve(s_tok)
                if s is None or s[1].type == "DATE":
                    continue
                for p, o_tok in objects:
                    o = self._resolve(o_tok)
                    if o is None:
                        continue
                    self.r.triple(self.chunk.id, s[0], p, o[0], s[1].id, o[1].id)
                    if p == "be" and self.own_title is not None and s[1].id == self.own_title.id:
                        # '<Title> is a 1948 American film noir': later 'the film' is the title too.
                        nc = self.noun_chunk_of.get(o_tok.i)
                        for w in nc if nc is not None else (o_tok,):
                            if w.pos_ == "NOUN":
                                self.topic_nouns.add(w.lower_)

    def _lemma(self, tok: Any) -> str:
        if tok.lemma_:  # the lemmatizer ran
            return tok.lemma_.lower()
        low = tok.lower_
        if self.lemmatizer is None:
            return low
        if low in _BE_FORMS:
            return "be"
        if tok.tag_ in _BASE_FORM_TAGS:  # what the lemmatizer reads from the morphology: already a lemma
            return low
        try:
            return self.lemmatizer.rule_lemmatize(tok)[0].lower()
        except Exception:  # noqa: BLE001 - a lemma is a nicety; the surface form will do
            return low

    def _subjects(self, verb: Any) -> tuple[list[Any], bool]:
        passive = any(c.dep_ in ("nsubjpass", "auxpass") for c in verb.children)
        subjects = [c for c in verb.children if c.dep_ in ("nsubj", "nsubjpass")]
        if not subjects:
            head = verb.head
            if verb.dep_ in ("acl", "relcl") and head.pos_ in ("NOUN", "PROPN"):
                subjects = [self._through_copula(head)]
                passive = passive or verb.tag_ == "VBN"
            elif verb.dep_ in ("conj", "xcomp") and head is not verb and head.pos_ in ("VERB", "AUX"):
                subjects = [c for c in head.children if c.dep_ in ("nsubj", "nsubjpass")]
                if verb.dep_ == "conj":
                    passive = passive or (
                        any(c.dep_ == "auxpass" for c in head.children) and verb.tag_ == "VBN"
                    )
        out = []
        for s in subjects:
            if s.lower_ in _RELATIVE_PRONOUNS and verb.dep_ == "relcl":
                s = self._through_copula(verb.head)
            out.append(s)
            out.extend(c for c in s.conjuncts if c.i > s.i)
        return out, passive

    @staticmethod
    def _through_copula(noun: Any) -> Any:
        """'X is an English footballer who plays ...': the footballer is X."""
        n = noun
        while n.dep_ == "conj" and n.head is not n:
            n = n.head
        if n.dep_ == "attr" and (n.head.lemma_ == "be" or n.head.lower_ in _BE_FORMS):
            subj = [c for c in n.head.children if c.dep_ == "nsubj"]
            if subj:
                return subj[0]
        return noun

    def _objects(self, verb: Any, pred: str) -> Iterator[tuple[str, Any]]:
        for c in verb.children:
            if c.dep_ in ("dobj", "attr", "oprd", "dative"):
                for o in (c, *c.conjuncts):
                    yield pred, o
                    # 'X is the son of Y' -> (X, 'be son of', Y)
                    if c.dep_ == "attr" and o.pos_ == "NOUN" and o.i not in self.token_ent:
                        for prep in o.children:
                            if prep.dep_ == "prep":
                                for po in prep.children:
                                    if po.dep_ == "pobj":
                                        for x in (po, *po.conjuncts):
                                            yield f"{pred} {self._lemma(o)} {prep.lower_}", x
            elif c.dep_ in ("prep", "agent"):
                for po in c.children:
                    if po.dep_ == "pobj":
                        for o in (po, *po.conjuncts):
                            yield f"{pred} {c.lower_}", o
            elif c.dep_ in ("npadvmod", "tmod", "nummod") and c.i in self.token_ent:
                ent, record = self.token_ent[c.i]
                if record is not None and ent.label_ == "DATE":
                    yield pred, c

    def _resolve(self, tok: Any) -> tuple[str, EntityRecord] | None:
        """The entity a subject/object token stands for: title span > NER span > pronoun > noun chunk."""
        if tok.i in self.token_title:
            span, ent = self.token_title[tok.i]
            return _clean_surface(span.text) or ent.name, ent
        if tok.i in self.token_ent:
            ent, record = self.token_ent[tok.i]
            if record is None:
                return None
            return record.name, record
        if tok.pos_ == "PRON" or tok.lower_ in _INDEFINITE_PRONOUNS:
            low = tok.lower_
            if low in _PERSONAL_PRONOUNS:
                if self.own_title is not None:
                    return self.own_title.name, self.own_title
                before = [rec for start, rec in self.first_person if start < tok.i]
                if before:
                    return before[-1].name, before[-1]
            elif low in _THING_PRONOUNS and self.own_title is not None:
                return self.own_title.name, self.own_title
            return None
        if tok.pos_ not in ("NOUN", "PROPN"):
            return None
        nc = self.noun_chunk_of.get(tok.i)
        words = list(nc) if nc is not None and nc.root.i == tok.i else [tok]
        if (self.own_title is not None and len(words) == 2 and words[0].lower_ in ("the", "this")
                and tok.lower_ in self.topic_nouns):
            return self.own_title.name, self.own_title  # 'the film' after '<Title> is a ... film
        while words and (
            words[0].dep_ in ("det", "poss", "predet", "case") or words[0].pos_ in ("PRON", "PUNCT", "DET", "PART")
        ):
            words = words[1:]
        if not words or len([w for w in words if w.is_alpha]) == 0:
            return None
        if len(words) > MAX_CONCEPT_WORDS:
            words = words[-MAX_CONCEPT_WORDS:]
        name = _clean_surface(self.doc[words[0].i : words[-1].i + 1].text)
        if not name:
            return None
        ent = self.r.entity(self.chunk.id, name, CONCEPT_TYPE)
        return (name, ent) if ent is not None else None


# --- pipeline control ------------------------------------------------------------------------------

_PIPE_LOCK = threading.RLock()


@contextmanager
def _pipes(nlp: Any, wanted: Sequence[str]) -> Iterator[list[str]]:
    """Run with exactly the wanted pipes (those the pipeline has) enabled; restore the previous state."""
    with _PIPE_LOCK:
        before = set(nlp.disabled)
        names = list(nlp.component_names)
        active = [n for n in wanted if n in names]
        try:
            for name in names:
                if name in active and name in nlp.disabled:
                    nlp.enable_pipe(name)
                elif name not in active and name not in nlp.disabled:
                    nlp.disable_pipe(name)
            yield active
        finally:
            for name in names:
                if name in before and name not in nlp.disabled:
                    nlp.disable_pipe(name)
                elif name not in before and name in nlp.disabled:
                    nlp.enable_pipe(name)


_LAST_MATCHER: list[tuple[Any, tuple[str, ...], TitleMatcher]] = []


def title_matcher(nlp: Any, titles: Iterable[str]) -> TitleMatcher:
    """The ``TitleMatcher`` of ``titles``, reused while the titles stay the same: an ingestion run distills
    a corpus in groups against the titles of the whole corpus (building it for 3,301 titles takes 0.4 s)."""
    names = tuple(titles)
    if _LAST_MATCHER and _LAST_MATCHER[0][0] is nlp and _LAST_MATCHER[0][1] == names:
        return _LAST_MATCHER[0][2]
    matcher = TitleMatcher(nlp, names)
    _LAST_MATCHER[:] = [(nlp, names, matcher)]
    return matcher


def _load_nlp() -> Any:
    from kbgraph.ingest.nlp import load_nlp

    return load_nlp()


def _auto_processes(n_chunks: int) -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(2, cpus) if n_chunks >= MULTIPROCESS_MIN_CHUNKS else 1


class _Offline:
    """Everything the offline extraction of a block of chunks needs (inherited by forked workers)."""

    def __init__(self, nlp: Any, chunks: Sequence[ChunkRecord], titles: Mapping[str, str] | None,
                 matcher: TitleMatcher | None, triples: bool, batch_size: int):
        self.nlp = nlp
        self.chunks = chunks
        self.titles = titles
        self.matcher = matcher
        self.triples = triples
        self.batch_size = batch_size
        self.tag_pos: dict[int, int] = {}
        self.lemmatizer = None
        if triples and "attribute_ruler" not in nlp.pipe_names:
            self.tag_pos = _tag_to_pos(nlp)
            if "lemmatizer" in nlp.component_names:
                self.lemmatizer = nlp.get_pipe("lemmatizer")

    def run(self, start: int, end: int) -> _Result:
        result = _Result()
        block = self.chunks[start:end]
        docs = self.nlp.pipe((_chunk_text(c) for c in block), batch_size=self.batch_size)
        for chunk, doc in zip(block, docs):
            self.one(result, chunk, doc)
        return result

    def one(self, result: _Result, chunk: ChunkRecord, doc: Any) -> None:
        if self.tag_pos:
            for tok in doc:  # what the attribute ruler would set, at a fraction of its cost
                tok.pos = self.tag_pos.get(tok.tag, 0)
        own = None
        if self.titles and (t := self.titles.get(chunk.document_id)):
            own = title_entity(t)
            result.entities.setdefault(own.id, own)
            result.mention(chunk.id, own.id)
        _add_tags(result, chunk, doc)
        found = self.matcher.find(doc) if self.matcher is not None else []
        title_ents = self.matcher.entities if self.matcher is not None else {}
        ex = _ChunkExtractor(result, chunk, doc, found, title_ents, own, self.lemmatizer)
        if self.triples:
            ex.triples()


def _tag_to_pos(nlp: Any) -> dict[int, int]:
    """Fine-grained tag -> coarse POS from the attribute ruler's one-tag rules (auxiliaries as AUX)."""
    from spacy.symbols import IDS

    strings = nlp.vocab.strings
    out: dict[int, int] = {}
    if "attribute_ruler" in nlp.component_names:
        for rule in nlp.get_pipe("attribute_ruler").patterns:
            pats = rule.get("patterns") or []
            pos = (rule.get("attrs") or {}).get("POS")
            if pos and len(pats) == 1 and len(pats[0]) == 1 and set(pats[0][0]) == {"TAG"}:
                tag = pats[0][0]["TAG"]
                if isinstance(tag, str) and pos in IDS:
                    out[strings.add(tag)] = IDS[pos]
    if not out:  # Penn Treebank defaults
        for tag, pos in {
            "NN": "NOUN", "NNS": "NOUN", "NNP": "PROPN", "NNPS": "PROPN", "PRP": "PRON", "PRP$": "PRON",
            "WP": "PRON", "WDT": "PRON", "DT": "DET", "IN": "ADP", "JJ": "ADJ", "JJR": "ADJ", "JJS": "ADJ",
            "RB": "ADV", "CD": "NUM", "CC": "CCONJ", "MD": "AUX", "POS": "PART", "RP": "ADP", "TO": "PART",
            ".": "PUNCT", ",": "PUNCT", ":": "PUNCT", "-LRB-": "PUNCT", "-RRB-": "PUNCT", "HYPH": "PUNCT",
            "VB": "VERB", "VBD": "VERB", "VBG": "VERB", "VBN": "VERB", "VBP": "VERB", "VBZ": "VERB",
        }.items():
            out[strings.add(tag)] = IDS[pos]
    return out


_WORKER: _Offline | None = None


def _worker_block(bounds: tuple[int, int]) -> _Result:
    assert _WORKER is not None
    return _WORKER.run(*bounds)


def _distill_offline(
    result: _Result,
    chunks: Sequence[ChunkRecord],
    nlp: Any,
    titles: Mapping[str, str] | None,
    matcher: TitleMatcher | None,
    *,
    triples: bool,
    batch_size: int,
    n_process: int | None,
) -> None:
    """Offline extraction; with ``n_process`` > 1 blocks of chunks go to forked workers that run spaCy and
    the extraction and send back only the records (no Doc serialisation)."""
    global _WORKER
    if not chunks:
        return
    wanted = PIPES_WITH_TRIPLES if triples else PIPES_WITHOUT_TRIPLES
    procs = _auto_processes(len(chunks)) if n_process is None else max(1, n_process)
    if procs > 1 and ("fork" not in multiprocessing.get_all_start_methods()
                      or multiprocessing.current_process().daemon):
        procs = 1  # workers inherit the loaded pipeline by fork; a daemon process may not have children
    with _pipes(nlp, wanted):
        job = _Offline(nlp, chunks, titles, matcher, triples, batch_size)
        if procs == 1:
            result.merge(job.run(0, len(chunks)))
            return
        step = max(64, min(512, -(-len(chunks) // (procs * 4))))
        blocks = [(i, min(i + step, len(chunks))) for i in range(0, len(chunks), step)]
        with _FORK_LOCK:
            _WORKER = job
            try:
                with multiprocessing.get_context("fork").Pool(procs) as pool:
                    for part in pool.imap(_worker_block, blocks):
                        result.merge(part)
            finally:
                _WORKER = None


_FORK_LOCK = threading.Lock()


# --- LLM extraction ---------------------------------------------------------------------------------


def _validated(obj: Any, schema: type[M]) -> M:
    if isinstance(obj, schema):
        return obj
    if isinstance(obj, BaseModel):
        obj = obj.model_dump()
    return schema.model_validate(obj)


def _llm_chunk(llm: JSONCompleter, chunk: ChunkRecord, title: str | None) -> tuple[AtomicQuestions, ExtractedKnowledge]:
    content = chunk.text if chunk.kind != "table" else f"{chunk.summary or ''}\n\n{chunk.text}".strip()
    if chunk.kind == "figure" and not chunk.text.strip():
        content = chunk.summary or ""
    questions = _validated(llm.complete_json(prompts.atomic_question_messages(content, title), AtomicQuestions),
                           AtomicQuestions)
    knowledge = _validated(
        llm.complete_json(prompts.triple_extraction_messages(content, title), ExtractedKnowledge),
        ExtractedKnowledge,
    )
    return questions, knowledge


def _map_llm_chunk(
    result: _Result, chunk: ChunkRecord, questions: AtomicQuestions, knowledge: ExtractedKnowledge,
    own: EntityRecord | None, title_ents: Mapping[str, EntityRecord],
) -> None:
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


# --- public entry point -----------------------------------------------------------------------------


def distill(
    chunks: list[ChunkRecord],
    *,
    llm: JSONCompleter | None = None,
    nlp: Any = None,
    titles: Mapping[str, str] | None = None,
    link_titles: bool = True,
    triples: bool = True,
    batch_size: int = 64,
    n_process: int | None = None,
    llm_workers: int = 4,
) -> tuple[list[AtomicQuestionRecord], list[EntityRecord], list[TripleRecord], list[MentionRecord]]:
    """Atomic tags, entities, triples and mentions of ``chunks``.

    ``llm``: None for the offline extraction (spaCy), or an object with ``complete_json`` for atomic
    questions, entities and triples by LLM. ``nlp``: a spaCy pipeline (default ``load_nlp()``).
    ``titles``: ``{document_id: title}`` for titled passages: each chunk MENTIONS its document's TITLE
    entity, and with ``link_titles`` also the TITLE entity of every given title its text names (pass the
    titles of the whole corpus to link across it). ``triples=False`` skips the dependency parse (offline
    mode): sentences come from the faster ``senter`` and no triples are made. ``n_process``: spaCy worker
    processes (None: 2 when there are at least ``MULTIPROCESS_MIN_CHUNKS`` chunks and 2 cores).
    Returns de-duplicated lists in first-seen order; entity names are their first surface form.
    """
    result = _Result()
    chunks = [c for c in chunks if _chunk_text(c).strip() or (c.kind == "table" and c.text.strip())]
    if not chunks:
        return result.as_tuple()
    if nlp is None and (llm is None or (titles and link_titles)):
        nlp = _load_nlp()
    matcher = title_matcher(nlp, titles.values()) if titles and link_titles else None

    if llm is None:
        _distill_offline(result, chunks, nlp, titles, matcher, triples=triples,
                         batch_size=batch_size, n_process=n_process)
        return result.as_tuple()

    def work(chunk: ChunkRecord) -> tuple[AtomicQuestions, ExtractedKnowledge] | None:
        title = titles.get(chunk.document_id) if titles else None
        try:
            return _llm_chunk(llm, chunk, title)
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
        own = None
        if titles and (t := titles.get(chunk.document_id)):
            own = title_entity(t)
            result.entities.setdefault(own.id, own)
            result.mention(chunk.id, own.id)
        _map_llm_chunk(result, chunk, answer[0], answer[1], own, title_ents)
    if matcher is not None:  # title mentions by text match, as offline
        for m in _title_mentions([c for c, a in zip(chunks, answers) if a is not None], matcher, nlp):
            result.entities.setdefault(m.entity_id, matcher.entities[m.entity_id])
            result.mention(m.chunk_id, m.entity_id)
    if failed:
        if nlp is None:
            nlp = _load_nlp()
        _distill_offline(result, failed, nlp, titles, matcher, triples=triples,
                         batch_size=batch_size, n_process=1)
    return result.as_tuple()


__all__ = [
    "AtomicQuestions",
    "CONCEPT_TYPE",
    "ExtractedEntity",
    "ExtractedKnowledge",
    "ExtractedTriple",
    "JSONCompleter",
    "KEPT_LABELS",
    "TITLE_TYPE",
    "TitleMatcher",
    "distill",
    "entity_id",
    "entity_key",
    "link_title_mentions",
    "normalize_date",
    "normalize_name",
    "title_entity",
]
