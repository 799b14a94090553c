"""Offline extraction with spaCy: entities, subject-verb-object triples and mentions of a chunk
(paper 003 Appendix A.5, Table 13 — the cheap alternative to LLM extraction; PIKE-RAG §5.3.1).

Entities come from spaCy NER (numbers, money, percentages, quantities and clock times are dropped; dates are
kept, see ``KEPT_LABELS``) and from the corpus's titles (``titles.TitleMatcher``); triples from dependency
subject-verb-object patterns, their ends mapped to the title or NER spans they fall in, else to noun chunks
that become ``CONCEPT`` entities. ``OfflineExtraction`` runs spaCy over a block of chunks and applies tags
(``tags.add_tags``) and ``ChunkExtractor`` to each; ``pool`` spreads blocks over forked workers.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from kbgraph.ingest.distill.names import CONCEPT_TYPE, clean_surface
from kbgraph.ingest.distill.result import Accumulator
from kbgraph.ingest.distill.tags import add_tags, chunk_text
from kbgraph.ingest.distill.titles import TitleMatcher
from kbgraph.models import ChunkRecord, EntityRecord

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.pipeline import AttributeRuler, Lemmatizer
    from spacy.tokens import Doc, Span, Token

#: spaCy NER labels kept as entities. Dropped: CARDINAL, ORDINAL, PERCENT, QUANTITY, MONEY (numbers link
#: unrelated passages through values like "two") and TIME ("night", "3 pm"). DATE is kept for questions
#: about when something happened, but only with a digit in it ("1951", "6 December 1951"; not "later").
KEPT_LABELS = frozenset(
    {"PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE", "DATE"}
)
#: Longest noun chunk (in words) accepted as a CONCEPT entity.
MAX_CONCEPT_WORDS = 6

_PERSONAL_PRONOUNS = frozenset({"he", "she", "him", "her"})
_THING_PRONOUNS = frozenset({"it"})
_BE_FORMS = frozenset({"be", "is", "are", "was", "were", "been", "being", "am", "'s", "'re", "'m"})
_BASE_FORM_TAGS = frozenset({"VB", "VBP", "NN", "NNP", "JJ", "MD"})
_INDEFINITE_PRONOUNS = frozenset(
    {
        "something",
        "anything",
        "nothing",
        "everything",
        "someone",
        "anyone",
        "everyone",
        "nobody",
        "somebody",
        "anybody",
        "everybody",
    }
)
_RELATIVE_PRONOUNS = frozenset({"who", "which", "that", "whom", "whose"})


@dataclass
class OfflineExtraction:
    """Everything the offline extraction of a block of chunks needs (inherited by forked workers).

    ``titles``: ``{document_id: title}`` (each chunk MENTIONS its own document's TITLE entity); ``matcher``:
    the corpus's titles to link, or None; ``triples``: run the dependency-based triple extraction."""

    nlp: Language
    chunks: Sequence[ChunkRecord]
    titles: Mapping[str, str] | None
    matcher: TitleMatcher | None
    triples: bool
    batch_size: int
    tag_pos: dict[int, int] = field(init=False, default_factory=dict)
    lemmatizer: Lemmatizer | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.triples and "attribute_ruler" not in self.nlp.pipe_names:
            self.tag_pos = tag_to_pos(self.nlp)
            if "lemmatizer" in self.nlp.component_names:
                # spaCy types get_pipe() as a plain Doc -> Doc callable; this component is its Lemmatizer
                self.lemmatizer = cast("Lemmatizer", self.nlp.get_pipe("lemmatizer"))

    def run(self, start: int, end: int) -> Accumulator:
        """The records of ``chunks[start:end]`` (spaCy in batches of ``batch_size``)."""
        result = Accumulator()
        block = self.chunks[start:end]
        docs = self.nlp.pipe((chunk_text(c) for c in block), batch_size=self.batch_size)
        for chunk, doc in zip(block, docs):
            self.one(result, chunk, doc)
        return result

    def one(self, result: Accumulator, chunk: ChunkRecord, doc: Doc) -> None:
        """Tags, entities, title mentions and (with ``triples``) triples of one chunk parsed as ``doc``."""
        if self.tag_pos:
            for tok in doc:  # what the attribute ruler would set, at a fraction of its cost
                tok.pos = self.tag_pos.get(tok.tag, 0)
        own = result.own_title(chunk.id, self.titles.get(chunk.document_id) if self.titles else None)
        add_tags(result, chunk, doc)
        found = self.matcher.find(doc) if self.matcher is not None else []
        title_ents = self.matcher.entities if self.matcher is not None else {}
        ex = ChunkExtractor(result, chunk, doc, found, title_ents, own, self.lemmatizer)
        if self.triples:
            ex.triples()


def tag_to_pos(nlp: Language) -> dict[int, int]:
    """Fine-grained tag -> coarse POS from the attribute ruler's one-tag rules (auxiliaries as AUX)."""
    from spacy.symbols import IDS

    strings = nlp.vocab.strings
    out: dict[int, int] = {}
    if "attribute_ruler" in nlp.component_names:
        ruler = cast("AttributeRuler", nlp.get_pipe("attribute_ruler"))  # get_pipe() is typed Doc -> Doc
        for rule in ruler.patterns:
            # spaCy types a rule's values as one union; a rule holds a list of token patterns and a dict of attrs
            pats, attrs = rule.get("patterns") or [], rule.get("attrs") or {}
            if not isinstance(pats, list) or not isinstance(attrs, dict):
                continue
            pos = attrs.get("POS")
            if (
                pos
                and len(pats) == 1
                and isinstance(pats[0], list)
                and len(pats[0]) == 1
                and set(pats[0][0]) == {"TAG"}
            ):
                tag = pats[0][0]["TAG"]
                if isinstance(tag, str) and pos in IDS:
                    out[strings.add(tag)] = IDS[pos]
    if not out:  # Penn Treebank defaults
        for tag, pos in {
            "NN": "NOUN",
            "NNS": "NOUN",
            "NNP": "PROPN",
            "NNPS": "PROPN",
            "PRP": "PRON",
            "PRP$": "PRON",
            "WP": "PRON",
            "WDT": "PRON",
            "DT": "DET",
            "IN": "ADP",
            "JJ": "ADJ",
            "JJR": "ADJ",
            "JJS": "ADJ",
            "RB": "ADV",
            "CD": "NUM",
            "CC": "CCONJ",
            "MD": "AUX",
            "POS": "PART",
            "RP": "ADP",
            "TO": "PART",
            ".": "PUNCT",
            ",": "PUNCT",
            ":": "PUNCT",
            "-LRB-": "PUNCT",
            "-RRB-": "PUNCT",
            "HYPH": "PUNCT",
            "VB": "VERB",
            "VBD": "VERB",
            "VBG": "VERB",
            "VBN": "VERB",
            "VBP": "VERB",
            "VBZ": "VERB",
        }.items():
            out[strings.add(tag)] = IDS[pos]
    return out


class ChunkExtractor:
    """Entities, triples and mentions of one parsed chunk."""

    def __init__(
        self,
        result: Accumulator,
        chunk: ChunkRecord,
        doc: Doc,
        titles: list[tuple[Span, list[str]]],
        title_entities: Mapping[str, EntityRecord],
        own_title: EntityRecord | None,
        lemmatizer: Lemmatizer | None = None,
    ):
        self.r = result
        self.lemmatizer = lemmatizer
        self.chunk = chunk
        self.doc = doc
        self.own_title = own_title
        self.title_entities = title_entities
        self.token_title: dict[int, tuple[Span, EntityRecord]] = {}
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
        self.token_ent: dict[int, tuple[Span, EntityRecord | None]] = {}
        self.first_person: list[tuple[int, EntityRecord]] = []
        for ner in doc.ents:
            record = self._ner_entity(ner)
            for i in range(ner.start, ner.end):
                self.token_ent[i] = (ner, record)
            if record is not None and ner.label_ == "PERSON":
                self.first_person.append((ner.start, record))

    def _ner_entity(self, ent: Span) -> EntityRecord | None:
        label = ent.label_
        if label not in KEPT_LABELS:
            return None
        name = clean_surface(ent.text)
        if label == "DATE" and not any(c.isdigit() for c in name):
            return None
        if not any(c.isalnum() for c in name):
            return None
        return self.r.entity(self.chunk.id, name, label)

    # -- triples --
    def triples(self) -> None:
        doc = self.doc
        self.noun_chunk_of: dict[int, Span] = {}
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
                        o_chunk = self.noun_chunk_of.get(o_tok.i)
                        for w in o_chunk if o_chunk is not None else (o_tok,):
                            if w.pos_ == "NOUN":
                                self.topic_nouns.add(w.lower_)

    def _lemma(self, tok: Token) -> str:
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

    def _subjects(self, verb: Token) -> tuple[list[Token], bool]:
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
                    passive = passive or (any(c.dep_ == "auxpass" for c in head.children) and verb.tag_ == "VBN")
        out = []
        for s in subjects:
            if s.lower_ in _RELATIVE_PRONOUNS and verb.dep_ == "relcl":
                s = self._through_copula(verb.head)
            out.append(s)
            out.extend(c for c in s.conjuncts if c.i > s.i)
        return out, passive

    @staticmethod
    def _through_copula(noun: Token) -> Token:
        """'X is an English footballer who plays ...': the footballer is X."""
        n = noun
        while n.dep_ == "conj" and n.head is not n:
            n = n.head
        if n.dep_ == "attr" and (n.head.lemma_ == "be" or n.head.lower_ in _BE_FORMS):
            subj = [c for c in n.head.children if c.dep_ == "nsubj"]
            if subj:
                return subj[0]
        return noun

    def _objects(self, verb: Token, pred: str) -> Iterator[tuple[str, Token]]:
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

    def _resolve(self, tok: Token) -> tuple[str, EntityRecord] | None:
        """The entity a subject/object token stands for: title span > NER span > pronoun > noun chunk."""
        if tok.i in self.token_title:
            span, ent = self.token_title[tok.i]
            return clean_surface(span.text) or ent.name, ent
        if tok.i in self.token_ent:
            _ner, record = self.token_ent[tok.i]
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
        if (
            self.own_title is not None
            and len(words) == 2
            and words[0].lower_ in ("the", "this")
            and tok.lower_ in self.topic_nouns
        ):
            return self.own_title.name, self.own_title  # 'the film' after '<Title> is a ... film
        while words and (
            words[0].dep_ in ("det", "poss", "predet", "case") or words[0].pos_ in ("PRON", "PUNCT", "DET", "PART")
        ):
            words = words[1:]
        if not words or len([w for w in words if w.is_alpha]) == 0:
            return None
        if len(words) > MAX_CONCEPT_WORDS:
            words = words[-MAX_CONCEPT_WORDS:]
        name = clean_surface(self.doc[words[0].i : words[-1].i + 1].text)
        if not name:
            return None
        record = self.r.entity(self.chunk.id, name, CONCEPT_TYPE)
        return (name, record) if record is not None else None


__all__ = ["KEPT_LABELS", "MAX_CONCEPT_WORDS", "ChunkExtractor", "OfflineExtraction", "tag_to_pos"]
