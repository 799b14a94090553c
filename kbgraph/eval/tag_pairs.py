"""Tag-pair collection (PIKE-RAG §5.2.2): "When practical QA samples are available, semantic tag extraction is
performed on both the queries and the corresponding retrieved answer chunks. Using the tag sets extracted from
the chunks and queries, LLMs are utilized to map cross-domain semantic tags and generate a tag pair
collection."

:func:`learn_tag_pairs` takes QA samples (a question and its gold chunks, given as chunk ids or as the passage
ids of a passage corpus: ``{"question", "chunk_ids"}`` or ``{"question", "gold_passage_ids"}``, the lines of
``kbgraph tags learn --qa FILE.jsonl`` and of the repo's ``examples/multihop`` sets) and for each:

1. reads the gold chunks' corpus tags (``(:Chunk)-[:TAGGED]->(:Tag {side: 'corpus'})``, written at ingest);
2. extracts the question's tags with the LLM (the query-time prompt, kbgraph.query.tags);
3. asks the LLM to map question tags to those corpus tags (``kbgraph.tagging.TAG_PAIRS``, JSON
   ``{"pairs": [{"question_tag", "corpus_tag", "score"}]}``); a pair naming a tag not offered is dropped,
   scores are clipped to [0, 1] (a 0-100 score is read as a percentage).

A pair seen in several samples keeps its best score and counts its samples. Then, in two statements, query Tags
are merged by id (``stable_id('tag', 'query', norm)``) and ``(:Tag {side: 'query'})-[:MAPS_TO {score, samples,
learned_at}]->(:Tag {side: 'corpus'})`` edges merged: re-learning updates scores and never duplicates a node
or an edge. Statements: ``cypher/tags/query_passage_chunks``, ``query_chunk_tags``, ``query_upsert_tags``,
``maps_to_upsert``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, Field, field_validator

from kbgraph.errors import ConfigError, QueryError
from kbgraph.llm.base import usable_json
from kbgraph.llm.bounds import MaxChars, MaxItems, answer_schema
from kbgraph.query.answering import UsageMeter
from kbgraph.query.context import QueryContext
from kbgraph.query.graph import text_of
from kbgraph.eval.metrics import passage_id
from kbgraph.query.models import UsageReport
from kbgraph.query.tags import class_pairs, extract_question_tags
from kbgraph.tagging import normalize_tag, tag_pairs_messages
from kbgraph.text import utc_now
from kbgraph.eval.dataset import load_dataset, select_questions
from kbgraph.store.base import GraphStore
from kbgraph.store.params import Row


class QASample(BaseModel):
    """A question and its gold chunks: ``chunk_ids``, or the ``gold_passage_ids`` of a passage corpus."""

    question: str
    chunk_ids: list[str] = Field(default_factory=list)
    gold_passage_ids: list[str] = Field(default_factory=list)


class PairAnswer(BaseModel):
    """One pair of the tag-pair prompt's answer."""

    question_tag: Annotated[str, MaxChars(80)] = ""
    corpus_tag: Annotated[str, MaxChars(80)] = ""
    score: float = 0.0

    @field_validator("question_tag", "corpus_tag", mode="before")
    @classmethod
    def _str(cls, v: Any) -> str:
        return text_of(v).strip()

    @field_validator("score", mode="before")
    @classmethod
    def _score(cls, v: Any) -> float:
        try:
            x = float(v)
        except (TypeError, ValueError):
            return 0.0
        x = x / 100.0 if 1.0 < x <= 100.0 else x
        return min(1.0, max(0.0, x))


@answer_schema
class PairsAnswer(BaseModel):
    """Answer of the tag-pair prompt (at most 16 pairs)."""

    pairs: Annotated[list[PairAnswer], MaxItems(16)] = Field(default_factory=list)

    @field_validator("pairs", mode="before")
    @classmethod
    def _pairs(cls, v: Any) -> list[object]:
        return [x for x in (v if isinstance(v, list) else []) if isinstance(x, dict)]


class TagPair(BaseModel):
    """A learned pair: query tag -> corpus tag, best ``score`` in [0, 1] over the ``samples`` that gave it."""

    query_tag: str
    query_id: str
    corpus_tag: str
    corpus_id: str
    score: float
    samples: int = 1


class TagPairReport(BaseModel):
    """What :func:`learn_tag_pairs` did: samples read, samples that gave pairs, skipped samples by reason,
    query tags and MAPS_TO edges written, the pairs, the LLM usage and the wall time (seconds)."""

    samples: int = 0
    learned: int = 0
    skipped: dict[str, int] = Field(default_factory=dict)
    query_tags: int = 0
    edges: int = 0
    pairs: list[TagPair] = Field(default_factory=list)
    usage: UsageReport = Field(default_factory=UsageReport)


def load_qa_samples(path: str | Path) -> list[QASample]:
    """QA samples of a JSONL file (one ``{"question", "chunk_ids"}`` or ``{"question", "gold_passage_ids"}``
    a line; other keys ignored). Raises ConfigError naming the line of a bad one."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f'no QA file at {p}: give a JSONL file of {{"question", "chunk_ids"}} lines')
    out = []
    for lineno, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                out.append(QASample.model_validate(json.loads(line)))
            except ValueError as exc:
                raise ConfigError(f"{p.name} line {lineno}: not a QA sample ({str(exc).splitlines()[0]})") from exc
    return out


def list_tag_pairs(store: GraphStore) -> list[TagPair]:
    """The tag pair collection in the graph: every query Tag -MAPS_TO-> corpus Tag, by query tag, best first."""
    return [
        TagPair(
            query_tag=text_of(r["query_tag"]),
            query_id=r["query_id"],
            corpus_tag=text_of(r["corpus_tag"]),
            corpus_id=r["corpus_id"],
            score=float(r["score"] or 0.0),
            samples=int(r["samples"] or 0),
        )
        for r in store.run("tags/maps_to_list")
    ]


def dataset_samples(
    dataset: str | Path, *, limit: int | None = None, sample: int | None = None, seed: int = 0
) -> list[QASample]:
    """QA samples of a multi-hop data set (``kbgraph eval``'s dataset argument: a ``<prefix>``, its questions
    file or its folder): each question with its ``gold_passage_ids``; ``sample`` / ``limit`` / ``seed`` as in
    ``kbgraph eval``. Raises ConfigError for a missing or malformed set."""
    questions = select_questions(load_dataset(dataset).questions, sample=sample, limit=limit, seed=seed)
    return [QASample(question=q.question, gold_passage_ids=q.gold_passage_ids) for q in questions]


def _passage_chunks(ctx: QueryContext) -> dict[str, list[str]]:
    """passage id -> its chunk ids, for every document of a passage corpus in the graph."""
    out: dict[str, list[str]] = {}
    for row in ctx.store.run("tags/query_passage_chunks"):
        out.setdefault(passage_id(text_of(row["uri"])), []).append(row["chunk_id"])
    return out


def _count(rows: Sequence[Row]) -> int:
    return int(rows[0]["written"]) if rows else 0


class QueryContextSource(Protocol):
    """What :func:`learn_tag_pairs` needs of a knowledge base (``kbgraph.kb.KnowledgeBase`` is one; kbgraph.eval
    does not import kbgraph.kb, the layer above it): its query context, with its LLM."""

    def query_context(self) -> QueryContext: ...


def _context(kb_or_ctx: QueryContextSource | QueryContext) -> QueryContext:
    if isinstance(kb_or_ctx, QueryContext):
        return kb_or_ctx
    return kb_or_ctx.query_context()


def learn_tag_pairs(
    kb_or_ctx: QueryContextSource | QueryContext, qa_samples: Iterable[QASample | Mapping[str, object]] | str | Path
) -> TagPairReport:
    """Learn the tag pair collection from ``qa_samples`` (module doc) on a KnowledgeBase or a QueryContext with
    an LLM; returns a :class:`TagPairReport`. Raises QueryError when no LLM is configured, LLMError when the
    server fails."""
    ctx = _context(kb_or_ctx)
    if ctx.llm is None:
        raise QueryError("learning tag pairs needs an LLM: set KBGRAPH_LLM_BASE_URL and KBGRAPH_LLM_MODEL")
    if isinstance(qa_samples, (str, Path)):
        qa_samples = load_qa_samples(qa_samples)
    samples = [s if isinstance(s, QASample) else QASample.model_validate(s) for s in qa_samples]
    meter, started = UsageMeter(ctx.llm), time.perf_counter()
    report = TagPairReport(samples=len(samples))
    passages = _passage_chunks(ctx) if any(s.gold_passage_ids for s in samples) else {}
    classes = class_pairs(ctx.store)
    pairs: dict[tuple[str, str], TagPair] = {}
    query_tags: dict[str, dict[str, str]] = {}

    def skip(reason: str) -> None:
        report.skipped[reason] = report.skipped.get(reason, 0) + 1

    for sample in samples:
        chunk_ids = list(
            dict.fromkeys([*sample.chunk_ids, *(c for p in sample.gold_passage_ids for c in passages.get(p, []))])
        )
        if not chunk_ids:
            skip("no gold chunk in the knowledge base")
            continue
        corpus: dict[str, tuple[str, str, str]] = {}  # norm -> (id, name, class)
        for row in ctx.store.run("tags/query_chunk_tags", {"chunk_ids": chunk_ids}):
            corpus.setdefault(
                normalize_tag(text_of(row["name"])), (row["id"], text_of(row["name"]), text_of(row["class"]))
            )
        if not corpus:
            skip("gold chunks have no corpus tags (ingest with auto_tagging on)")
            continue
        tags = extract_question_tags(ctx.llm, sample.question, classes)
        if not tags:
            skip("no question tag extracted")
            continue
        by_norm = {t.norm: t for t in tags}
        messages = tag_pairs_messages(
            sample.question, [(t.name, t.tag_class) for t in tags], [(name, cls) for _, name, cls in corpus.values()]
        )
        answer, _why = usable_json(ctx.llm, messages, PairsAnswer)
        found: dict[tuple[str, str], TagPair] = {}  # this sample's pairs, best score each
        for p in answer.pairs if answer else []:
            q, c = by_norm.get(normalize_tag(p.question_tag)), corpus.get(normalize_tag(p.corpus_tag))
            if q is None or c is None or p.score <= 0:
                continue
            query_tags.setdefault(q.id, {"id": q.id, "name": q.name, "norm": q.norm, "class": q.tag_class})
            key = (q.id, c[0])
            if key not in found or p.score > found[key].score:
                found[key] = TagPair(query_tag=q.name, query_id=q.id, corpus_tag=c[1], corpus_id=c[0], score=p.score)
        for key, pair in found.items():
            old = pairs.get(key)
            if old is None:
                pairs[key] = pair
            else:
                old.samples, old.score = old.samples + 1, max(old.score, pair.score)
        if found:
            report.learned += 1
        else:
            skip("no usable tag pair in the LLM's answer")
    report.pairs = sorted(pairs.values(), key=lambda t: (t.query_tag, -t.score, t.corpus_tag))
    if query_tags:
        report.query_tags = _count(ctx.store.run("tags/query_upsert_tags", {"tags": list(query_tags.values())}))
        rows = [p.model_dump(include={"query_id", "corpus_id", "score", "samples"}) for p in report.pairs]
        report.edges = _count(ctx.store.run("tags/maps_to_upsert", {"pairs": rows, "now": utc_now()}))
    report.usage = meter.report()
    report.usage.seconds = round(time.perf_counter() - started, 4)
    return report
