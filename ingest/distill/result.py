"""The records distill produces, gathered without duplicates (PIKE-RAG §5.3.1, the distilled layer).

``Accumulator`` collects atomic questions, entities, triples and mentions as the extractors find them, each
de-duplicated by its stable id and kept in first-seen order; ``Distilled`` is the finished, read-only result
``distill`` returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from kbgraph.ingest.distill.names import SPACE, entity_id, entity_key, title_entity
from kbgraph.models import AtomicQuestionRecord, EntityRecord, MentionRecord, TripleRecord, stable_id


class Distilled(NamedTuple):
    """What ``distill`` returns: the distilled knowledge of a list of chunks, each list de-duplicated, in
    first-seen order. ``questions``: atomic tags/questions (``AtomicQuestion`` nodes, paper 003 A.5/A.7);
    ``entities``: entities named by their first surface form; ``triples``: subject-predicate-object triples
    between two entities; ``mentions``: chunk -> entity ``MENTIONS``.

    A named tuple, so it also unpacks as ``questions, entities, triples, mentions``."""

    questions: list[AtomicQuestionRecord]
    entities: list[EntityRecord]
    triples: list[TripleRecord]
    mentions: list[MentionRecord]


@dataclass
class Accumulator:
    """What distill returns, accumulated with de-duplication, in first-seen order."""

    questions: dict[str, AtomicQuestionRecord] = field(default_factory=dict)
    entities: dict[str, EntityRecord] = field(default_factory=dict)
    triples: dict[str, TripleRecord] = field(default_factory=dict)
    mentions: dict[tuple[str, str], MentionRecord] = field(default_factory=dict)

    def question(self, chunk_id: str, text: str, kind: str) -> None:
        """An atomic tag of the chunk (``kind``: 'sentence' offline, 'question' by LLM); blank text is ignored."""
        text = SPACE.sub(" ", text).strip()
        if not text:
            return
        qid = stable_id("aq", chunk_id, text)
        if qid not in self.questions:
            self.questions[qid] = AtomicQuestionRecord(id=qid, chunk_id=chunk_id, text=text, kind=kind)

    def entity(self, chunk_id: str, name: str, type_: str) -> EntityRecord | None:
        """The entity (name, type), added on first sight and mentioned by the chunk; None for a name with
        no merge key (punctuation only)."""
        name = SPACE.sub(" ", name).strip()
        if not entity_key(name, type_):
            return None
        ent = EntityRecord(id=entity_id(name, type_), name=name, type=type_)
        ent = self.entities.setdefault(ent.id, ent)
        self.mention(chunk_id, ent.id)
        return ent

    def own_title(self, chunk_id: str, title: str | None) -> EntityRecord | None:
        """The TITLE entity of the chunk's own document (``title``), added and mentioned by the chunk; None
        when the document has no title given."""
        if not title:
            return None
        own = title_entity(title)
        self.entities.setdefault(own.id, own)
        self.mention(chunk_id, own.id)
        return own

    def mention(self, chunk_id: str, ent_id: str) -> None:
        self.mentions.setdefault((chunk_id, ent_id), MentionRecord(chunk_id=chunk_id, entity_id=ent_id))

    def triple(self, chunk_id: str, s: str, p: str, o: str, s_id: str, o_id: str) -> None:
        """The triple (s, p, o) of the chunk between entities ``s_id`` and ``o_id``; none when a part is blank
        or both ends are one entity."""
        if not (s and p and o) or s_id == o_id:
            return
        tid = stable_id("tri", chunk_id, s, p, o)
        if tid not in self.triples:
            self.triples[tid] = TripleRecord(
                id=tid,
                chunk_id=chunk_id,
                subject=s,
                predicate=p,
                object=o,
                subject_id=s_id,
                object_id=o_id,
                text=f"{s} {p} {o}",
            )

    def merge(self, other: Accumulator) -> None:
        """Add ``other``'s records after these (a forked worker's block)."""
        for qid, q in other.questions.items():
            self.questions.setdefault(qid, q)
        for eid, e in other.entities.items():
            self.entities.setdefault(eid, e)
        for tid, t in other.triples.items():
            self.triples.setdefault(tid, t)
        for key, m in other.mentions.items():
            self.mentions.setdefault(key, m)

    def copy_chunks(self, copies: Sequence[tuple[str, str]]) -> None:
        """For each ``(chunk_id, source_id)`` of ``copies``, give chunk ``chunk_id`` the tags, triples and
        mentions already extracted for chunk ``source_id`` (a chunk whose text spaCy reads the same way;
        ``kbgraph.ingest.distill.pool``), with the ids they would have had if it had been extracted itself
        (each id hashes its chunk's id)."""
        qs: dict[str, list[AtomicQuestionRecord]] = {}
        ts: dict[str, list[TripleRecord]] = {}
        ms: dict[str, list[MentionRecord]] = {}
        for q in self.questions.values():
            qs.setdefault(q.chunk_id, []).append(q)
        for t in self.triples.values():
            ts.setdefault(t.chunk_id, []).append(t)
        for m in self.mentions.values():
            ms.setdefault(m.chunk_id, []).append(m)
        for chunk_id, source_id in copies:
            for q in qs.get(source_id, ()):
                self.question(chunk_id, q.text, q.kind)
            for t in ts.get(source_id, ()):
                self.triple(chunk_id, t.subject, t.predicate, t.object, t.subject_id, t.object_id)
            for m in ms.get(source_id, ()):
                self.mention(chunk_id, m.entity_id)

    def order_by_chunk(self, chunk_ids: Sequence[str]) -> None:
        """Put the tags, triples and mentions in the order of their chunks in ``chunk_ids`` (stable within a
        chunk): the order extracting the chunks one after the other gives. Entities keep first-seen order."""
        rank = {cid: i for i, cid in enumerate(chunk_ids)}
        last = len(rank)
        self.questions = dict(sorted(self.questions.items(), key=lambda kv: rank.get(kv[1].chunk_id, last)))
        self.triples = dict(sorted(self.triples.items(), key=lambda kv: rank.get(kv[1].chunk_id, last)))
        self.mentions = dict(sorted(self.mentions.items(), key=lambda kv: rank.get(kv[1].chunk_id, last)))

    def distilled(self) -> Distilled:
        return Distilled(
            questions=list(self.questions.values()),
            entities=list(self.entities.values()),
            triples=list(self.triples.values()),
            mentions=list(self.mentions.values()),
        )


__all__ = ["Accumulator", "Distilled"]
