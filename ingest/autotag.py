"""Auto-tagging, corpus side (PIKE-RAG §5.2.2, L1): tag classes and the corpus tag collection.

"We leverage the capabilities of the LLMs to identify key factors within the corpus chunks, summarize these
factors, and generalize them into category names, which we refer to as 'tag classes'. We generate semantic
tag extraction prompts based on these tag classes ... to extract semantic tags from the corpus, thereby forming
a comprehensive corpus tag collection." (§5.2.2). In the graph:

    (:TagClass {id, name, description, created_at})     id = stable_id('tagclass', normalize_tag(name))
    (:Tag {id, name, norm, class, side: 'corpus', embedding, created_at})
                                                        id = stable_id('tag', 'corpus', normalize_tag(name))
    (:Chunk {tagged_at})-[:TAGGED]->(:Tag)

* ``ensure_tag_classes``: the first time (no TagClass yet) the LLM reads ``settings.tagging.tag_class_sample`` chunks
  spread over the knowledge base (evenly by chunk id) and proposes the classes; later runs reuse them
  (``tag_classes`` lists them; ``kbgraph tags classes`` prints them).
* ``tag_chunks``: per chunk one LLM request for its tags of those classes (tags of another class are dropped);
  tags are merged by normalised name (``normalize_tag``) across chunks and runs, a new one is embedded by its
  name with the knowledge base's embedder (the Tag vector index; a full-text index on Tag.norm), and TAGGED
  edges written. Chunks go in batches of ``4 * settings.tagging.tag_workers`` requests, each batch written in one unit
  of work; a chunk whose request fails is reported (``TaggingReport.errors``) and stays untagged (no
  ``tagged_at``), so the next ingest asks again; the others are written.
* Incremental (kbgraph.ingest.pipeline, stage ``tag``): ``pending_chunks`` are the served chunks with no
  ``tagged_at``: a changed document's chunks are replaced on re-ingest (their TAGGED edges go with them) and
  only they are asked. Deleting a document removes the corpus Tags no other chunk has and the query Tags that
  mapped only to them (``GraphStore.delete_document``, ``kbgraph.store.base.delete_orphan_tags``).

The query side (question tags, the tag pair collection, the Tag layer of retrieval) is kbgraph.query.tags.
Statements: ``cypher/tags/*``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from kbgraph.errors import ConfigError, LLMError
from kbgraph.settings import Settings
from kbgraph.store import GraphStore
from kbgraph.tagging import MAX_TAG_CHARS, TagClass, normalize_tag, tag_class_id, tag_classes, tag_id
from kbgraph.text import one_line, utc_now
from kbgraph.ingest.autotag_llm import ask_chunks, chunk_content, propose_classes
from kbgraph.store.base import delete_orphan_tags
from kbgraph.llm.base import LLM
from kbgraph.embed.base import Embedder


class ChunkTagError(BaseModel):
    """A chunk whose tagging request failed (it stays untagged until the next ingest asks again)."""

    chunk_id: str
    error: str


class TaggingReport(BaseModel):
    """What ``tag_chunks`` did: ``chunks`` given, ``asked`` (LLM requests for chunks), ``tagged`` (chunks answered
    and written, with or without tags), ``tags`` (TAGGED edges written), ``new_tags`` (Tag nodes created),
    ``classes`` (the tag classes used), ``classes_proposed`` (proposed in this call), ``errors`` (one per failed
    chunk, or the class proposal's: chunk_id ''), ``stopped`` (why chunks were left unasked), ``seconds``."""

    chunks: int = 0
    asked: int = 0
    tagged: int = 0
    tags: int = 0
    new_tags: int = 0
    classes: list[str] = Field(default_factory=list)
    classes_proposed: bool = False
    errors: list[ChunkTagError] = Field(default_factory=list)
    stopped: str | None = None
    seconds: float = 0.0

    @property
    def failed(self) -> int:
        return len(self.errors)


def sample_chunk_ids(store: GraphStore, n: int) -> list[str]:
    """``n`` served chunk ids spread evenly over all of them in id order (deterministic; all when fewer)."""
    ids = [r["id"] for r in store.run("tags/chunk_ids")]
    if len(ids) <= n:
        return ids
    step = (len(ids) - 1) / max(1, n - 1)
    return list(dict.fromkeys(ids[round(i * step)] for i in range(n)))


def propose_tag_classes(store: GraphStore, settings: Settings, llm: LLM) -> list[TagClass]:
    """Ask the LLM for the tag classes of ``settings.tagging.tag_class_sample`` sampled chunks and write them as
    (:TagClass) nodes (merged by normalised name). Returns the classes written. Raises ConfigError when the
    knowledge base has no chunk, LLMError when the LLM fails or proposes no class."""
    ids = sample_chunk_ids(store, settings.tagging.tag_class_sample)
    if not ids:
        raise ConfigError("no chunk to propose tag classes from: ingest documents first")
    passages = [chunk_content(r) for r in store.run("tags/chunk_contents", {"ids": ids})]
    proposed: dict[str, dict[str, str]] = {}
    for name, description in propose_classes(llm, passages):
        if normalize_tag(name):
            cid = tag_class_id(name)
            proposed.setdefault(cid, {"id": cid, "name": " ".join(name.split()), "description": description})
    if not proposed:
        raise LLMError(
            "the LLM proposed no tag class (the answer held no named class); try a stronger model (KBGRAPH_LLM_MODEL)"
        )
    return write_tag_classes(store, [TagClass(name=r["name"], description=r["description"]) for r in proposed.values()])


def write_tag_classes(store: GraphStore, classes: list[TagClass]) -> list[TagClass]:
    """Write ``classes`` as (:TagClass) nodes, merged by normalised name (a class given twice is written once;
    an existing one gets the new description): classes a user defines, or the LLM's proposal. Returns the
    classes written."""
    rows: dict[str, dict[str, str]] = {}
    for c in classes:
        if normalize_tag(c.name):
            cid = tag_class_id(c.name)
            rows.setdefault(cid, {"id": cid, "name": " ".join(c.name.split()), "description": c.description})
    store.write_batches("tags/upsert_classes", list(rows.values()), {"now": utc_now()})
    return [TagClass(name=r["name"], description=r["description"]) for r in rows.values()]


def ensure_tag_classes(store: GraphStore, settings: Settings, llm: LLM) -> tuple[list[TagClass], bool]:
    """The knowledge base's tag classes, proposed now (``propose_tag_classes``) when it has none; and whether
    they were proposed now. Raises as ``propose_tag_classes``."""
    classes = tag_classes(store)
    if classes:
        return classes, False
    return propose_tag_classes(store, settings, llm), True


def pending_chunks(store: GraphStore) -> list[str]:
    """Served chunks not tagged yet (no ``tagged_at``), in id order: what the ingest stage ``tag`` asks for."""
    return [r["id"] for r in store.run("tags/pending_chunks")]


def tag_chunks(
    store: GraphStore,
    settings: Settings,
    llm: LLM,
    embedder: Embedder,
    chunk_ids: Sequence[str],
    *,
    before_write: Callable[[], None] | None = None,
    on_batch: Callable[[int, int], None] | None = None,
) -> TaggingReport:
    """Tag the chunks ``chunk_ids`` (PIKE-RAG §5.2.2 corpus tag collection): classes from
    ``ensure_tag_classes`` (proposed first when the knowledge base has none), one LLM request per chunk,
    ``settings.tagging.tag_workers`` in flight. Per batch of ``4 * tag_workers`` chunks, in one unit of work: the
    answered chunks' earlier TAGGED edges are replaced, new Tags created (embedded by name with ``embedder``:
    anything with ``embed(texts)``), TAGGED edges written, ``tagged_at`` set, and Tags left on no chunk
    deleted. Idempotent: tagging a chunk again gives the same Tags, no duplicate. A failed request is reported
    and its chunk left untagged; a failed class proposal is reported and nothing is tagged; after
    ``autotag_llm.MAX_FAILURES_IN_A_ROW`` failures in a row the rest is left (``stopped``). ``before_write``:
    called before each write (the ingest lock's check); ``on_batch(done, total)``: after each batch.
    Errors of the store (StoreError) propagate."""
    t0 = time.perf_counter()
    ids = list(dict.fromkeys(chunk_ids))
    report = TaggingReport(chunks=len(ids))
    if not ids:
        return report
    try:
        classes, report.classes_proposed = ensure_tag_classes(store, settings, llm)
    except (LLMError, ConfigError, ValueError) as exc:
        report.errors.append(ChunkTagError(chunk_id="", error=one_line(f"tag classes: {exc}", 500)))
        report.stopped = "no tag classes: nothing was tagged"
        report.seconds = round(time.perf_counter() - t0, 3)
        return report
    report.classes = [c.name for c in classes]
    pairs = [(c.name, c.description) for c in classes]
    by_norm = {normalize_tag(c.name): c.name for c in classes}
    size = 4 * max(1, settings.tagging.tag_workers)
    failures = 0
    for start in range(0, len(ids), size):
        batch = ids[start : start + size]
        contents = _contents(store, batch)
        asked = ask_chunks(llm, contents, pairs, workers=settings.tagging.tag_workers, failures_in_a_row=failures)
        failures = asked.failures_in_a_row
        report.asked += len(contents)
        report.errors += [ChunkTagError(chunk_id=c, error=e) for c, e in asked.errors.items()]
        if asked.answers:
            if before_write is not None:
                before_write()
            _write(store, embedder, asked.answers, by_norm, report)
        if on_batch is not None:
            on_batch(min(start + size, len(ids)), len(ids))
        if asked.give_up and start + size < len(ids):
            report.stopped = (
                f"{failures} tagging requests failed in a row; {len(ids) - start - size} chunks were "
                "not asked and stay untagged until the next ingest"
            )
            break
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def _contents(store: GraphStore, ids: list[str]) -> list[tuple[str, str]]:
    rows = {r["id"]: r for r in store.run("tags/chunk_contents", {"ids": ids})}
    return [(i, chunk_content(rows[i])) for i in ids if i in rows]


def _write(
    store: GraphStore,
    embedder: Embedder,
    answers: dict[str, list[tuple[str, str]]],
    by_norm: dict[str, str],
    report: TaggingReport,
) -> None:
    """One batch's answers into the graph (see ``tag_chunks``)."""
    tags: dict[str, dict[str, Any]] = {}  # id -> row, first spelling wins
    links: list[dict[str, str]] = []
    for chunk_id, answered in answers.items():
        seen: set[str] = set()
        for name, class_name in answered:
            norm = normalize_tag(name)
            klass = by_norm.get(normalize_tag(class_name))
            if not norm or klass is None or len(name) > MAX_TAG_CHARS:
                continue  # a tag of no known class, or not a tag
            tid = tag_id(norm)
            tags.setdefault(tid, {"id": tid, "name": " ".join(name.split()), "norm": norm, "class": klass})
            if tid not in seen:
                seen.add(tid)
                links.append({"chunk_id": chunk_id, "tag_id": tid})
    existing = {r["id"] for r in store.run("tags/existing_tags", {"ids": list(tags)})} if tags else set()
    new = [row for tid, row in tags.items() if tid not in existing]
    if new:
        for row, vec in zip(new, embedder.embed([row["name"] for row in new]), strict=True):
            row["embedding"] = store.check_vector(vec.tolist() if hasattr(vec, "tolist") else vec, "Tag")
    now = utc_now()
    with store.transaction() as tx:
        old = [r["id"] for r in tx.run("tags/untag_chunks", {"ids": list(answers)})]
        tx.write_batches("tags/upsert_tags", new, {"now": now})
        tx.write_batches("tags/link_tagged", links)
        tx.write_batches("tags/mark_tagged", [{"id": c} for c in answers], {"now": now})
        delete_orphan_tags(tx, [t for t in dict.fromkeys(old) if t not in tags])
    report.tagged += len(answers)
    report.tags += len(links)
    report.new_tags += len(new)


__all__ = [
    "ChunkTagError",
    "TaggingReport",
    "ensure_tag_classes",
    "pending_chunks",
    "propose_tag_classes",
    "sample_chunk_ids",
    "tag_chunks",
]
