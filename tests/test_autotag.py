"""Auto-tagging, corpus side (PIKE-RAG §5.2.2; kbgraph.ingest.autotag): tag classes, the corpus tag collection
at ingest, its incremental upkeep and orphan removal, on both stores, through the real ingestion pipeline over
a few MuSiQue passages of examples/ with real embeddings and a scripted LLM that reads the prompts; and one
run of ``tag_chunks`` against the real local LLM server (the machinery, not the tags' quality).
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from kbgraph.embed.base import Embedder
from kbgraph.errors import LLMError
from kbgraph.ingest.autotag import pending_chunks, tag_chunks
from kbgraph.ingest.report import IngestReport
from kbgraph.llm.base import LLM, Messages
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore
from kbgraph.tagging import normalize_tag, tag_classes, tag_id
from kbgraph.ingest.pipeline import Ingestor
from kbgraph.llm.fake import ScriptedLLM
from tests.llm_server_fixture import LLMServerInfo

PASSAGES = 4
CLASSES = [
    {"name": "Person", "description": "people and characters"},
    {"name": "Place", "description": "places and key facts"},
    {"name": "Topic", "description": "what a passage is about"},
]
SHARED = ["Shared Topic", "  shared   TOPIC. ", "“Shared topic”"]  # one tag once normalised


def test_normalize_tag() -> None:
    assert normalize_tag("  The  U.S. ") == "the u.s"
    assert normalize_tag("“Shared topic”") == normalize_tag("SHARED\tTOPIC!") == "shared topic"
    assert normalize_tag("ＡＢＣ") == "abc"  # NFKC: full-width letters
    assert normalize_tag("...") == ""
    assert tag_id("shared topic") == tag_id("shared topic", "corpus") != tag_id("shared topic", "query")


# --- corpus and scripted LLM ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def passages(examples_dir: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (examples_dir / "multihop/musique/hipporag_train100.corpus.jsonl").open()]
    chosen: list[dict[str, Any]] = []
    titles: set[str] = set()
    for p in rows:
        if p["title"] not in titles:
            titles.add(p["title"])
            chosen.append(p)
        if len(chosen) == PASSAGES:
            return chosen
    raise AssertionError("too few passages")


@pytest.fixture(scope="module")
def embedder(falkor_settings: Settings) -> Embedder:
    from kbgraph.embed import get_embedder

    return get_embedder(falkor_settings)


def write_corpus(path: Path, passages: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(p) + "\n" for p in passages), encoding="utf-8")
    return path


def _first_user(messages: Messages) -> str:
    return next(m["content"] for m in messages if m["role"] == "user")


def key_tag(content: str) -> str:
    """A tag unique to one version of a chunk's text (to see a changed chunk's old tags go)."""
    return "Key " + hashlib.sha256(content.encode()).hexdigest()[:6]


class TaggingLLM(ScriptedLLM):
    """Answers every ingest prompt: tag classes, chunk tags (title: Person; a shared tag in varying spellings:
    Topic, asked as 'topic'; a per-text key: Place; a tag of an unknown class), and empty knowledge for the
    distill prompts. Chunks whose title is in ``failing`` get a server error."""

    def __init__(self, failing: Iterable[str] = ()) -> None:
        self.failing = set(failing)
        self.asked: Counter[str] = Counter()  # prompt kind -> requests
        self.tagged_titles: list[str] = []
        super().__init__(self.respond)

    def respond(self, messages: Messages) -> str:
        text = _first_user(messages)
        if "generalize them into" in text:
            self.asked["classes"] += 1
            return json.dumps({"tag_classes": CLASSES})
        if "extract the semantic tags of the passage" in text:
            self.asked["tags"] += 1
            content = text.split("# Passage\n", 1)[1].rsplit("# Your Output", 1)[0].strip()
            title = re.match(r"Title: (.*)", content).group(1)  # type: ignore[union-attr]
            self.tagged_titles.append(title)
            if title in self.failing:
                raise LLMError("the LLM server is down (scripted)")
            tags = [
                {"name": title, "class": "Person"},
                {"name": SHARED[len(self.tagged_titles) % len(SHARED)], "class": "topic"},
                {"name": key_tag(content), "class": "Place"},
                {"name": "Stray", "class": "Colour"},  # no such class: dropped
            ]
            return json.dumps({"tags": tags})
        if "extract as many questions as possible" in text:
            return '{"questions": []}'
        return '{"entities": [], "triples": []}'


def ingest(store: GraphStore, settings: Settings, path: Path, llm: LLM | None, embedder: Embedder) -> IngestReport:
    return Ingestor(store, settings, llm=llm, embedder=embedder, progress=False).run([path])


def tagged(store: GraphStore) -> dict[str, set[str]]:
    """{chunk's document title: names of its tags}."""
    rows = store.run("tags/query_chunk_tags", {"chunk_ids": [r["id"] for r in store.run("tags/chunk_ids")]})
    titles = {r["id"]: r["title"] for r in store.run("tags/chunk_contents", {"ids": [r["chunk_id"] for r in rows]})}
    out: dict[str, set[str]] = {}
    for r in rows:
        out.setdefault(titles[r["chunk_id"]], set()).add(r["name"])
    return out


def counts(store: GraphStore) -> tuple[int, int, int]:
    st = store.stats()
    return st.nodes.get("Tag", 0), st.nodes.get("TagClass", 0), st.relationships.get("TAGGED", 0)


@pytest.fixture
def tag_settings(backend_settings: Settings) -> Settings:
    return backend_settings.updated({"auto_tagging": True, "llm_chunking": False, "tag_class_sample": 3})


# --- ingest -----------------------------------------------------------------------------------------------
def test_ingest_tags_chunks_incrementally(
    store: GraphStore,
    tag_settings: Settings,
    passages: list[dict[str, Any]],
    embedder: Embedder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = write_corpus(tmp_path / f"p{uuid.uuid4().hex[:6]}.jsonl", passages)
    llm = TaggingLLM()
    report = ingest(store, tag_settings, path, llm, embedder)
    titles = [p["title"] for p in passages]
    assert report.status == "completed" and report.chunks == PASSAGES
    # tag classes: proposed once from the sample, stored as (:TagClass)
    assert llm.asked["classes"] == 1 and [c.name for c in tag_classes(store)] == ["Person", "Place", "Topic"]
    t = report.tagging
    assert t is not None
    assert t.classes_proposed and t.asked == t.tagged == PASSAGES and t.failed == 0 and t.stopped is None
    assert sorted(llm.tagged_titles) == sorted(titles) and report.seconds["tag"] > 0
    # TAGGED to the right chunks; the shared tag merged by norm; the unknown class dropped
    keys = {p["title"]: key_tag(f"Title: {p['title']}\nContent: {p['text']}") for p in passages}
    by_title = tagged(store)
    assert set(by_title) == set(titles)
    for title, names in by_title.items():
        assert {title, keys[title]} <= names and len(names) == 3 and "Stray" not in names
    shared = store.run("tags/existing_tags", {"ids": [tag_id("shared topic")]})
    assert len(shared) == 1
    assert counts(store) == (2 * PASSAGES + 1, 3, 3 * PASSAGES)
    assert t.new_tags == 2 * PASSAGES + 1 and t.tags == 3 * PASSAGES
    # each Tag: id from its norm, side corpus, class, a 384-dim embedding; vector and full-text search work
    qvec = embedder.embed(["shared topic"])[0]
    hits = store.vector_search("Tag", qvec, k=3)
    assert hits[0].id == tag_id("shared topic") and hits[0].score > 0.8
    props = hits[0].properties
    assert props["norm"] == "shared topic" and props["side"] == "corpus" and props["class"] == "Topic"
    every = store.vector_search("Tag", qvec, k=50)  # every Tag has its vector in the index
    assert len(every) == 2 * PASSAGES + 1 and all(h.properties["side"] == "corpus" for h in every)
    assert store.fulltext_search("Tag", "shared", k=5)[0].id == tag_id("shared topic")
    assert not [o for o in store.orphans() if o["label"] == "Tag"]
    # kbgraph tags classes
    from kbgraph import cli
    from kbgraph.cli import common

    monkeypatch.setattr(common, "settings", lambda: tag_settings)
    assert cli.main(["tags", "classes", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(c["name"], c["tags"]) for c in listed] == [("Person", PASSAGES), ("Place", PASSAGES), ("Topic", 1)]

    # an unchanged re-run asks nothing and writes no duplicate
    again = TaggingLLM()
    report = ingest(store, tag_settings, path, again, embedder)
    assert report.unchanged == PASSAGES and report.tagging is None and not again.asked
    assert counts(store) == (2 * PASSAGES + 1, 3, 3 * PASSAGES)

    # a changed document: only its chunk is tagged again; its old key tag goes, the classes are reused
    changed = [dict(p) for p in passages]
    changed[1]["text"] += " REVISED."
    write_corpus(path, changed)
    again = TaggingLLM()
    report = ingest(store, tag_settings, path, again, embedder)
    assert report.updated == 1 and again.tagged_titles == [titles[1]] and again.asked["classes"] == 0
    # (its title tag was on no other chunk: deleted with the old chunk, as orphan entities are, and created again)
    assert report.tagging is not None
    assert not report.tagging.classes_proposed and report.tagging.new_tags == 2
    new_key = key_tag(f"Title: {titles[1]}\nContent: {changed[1]['text']}")
    names = tagged(store)[titles[1]]
    assert {titles[1], new_key} <= names and len(names) == 3 and "shared topic" in {normalize_tag(n) for n in names}
    assert not store.run("tags/existing_tags", {"ids": [tag_id(normalize_tag(keys[titles[1]]))]})
    assert counts(store) == (2 * PASSAGES + 1, 3, 3 * PASSAGES)

    # delete a document: its own tags go, the shared one stays; a query Tag mapped only to a deleted tag goes
    docs = {r["uri"].rsplit("#", 1)[1]: r["id"] for r in store.run("ingest/list_documents")}
    gone = passages[0]
    now = "2025-01-01T00:00:00Z"
    q_tags = [{"id": tag_id(n, "query"), "name": n, "norm": n, "class": "Person"} for n in ("only gone", "both")]
    store.run("tags/query_upsert_tags", {"tags": q_tags})
    pairs = [
        {
            "query_id": tag_id("only gone", "query"),
            "corpus_id": tag_id(normalize_tag(gone["title"])),
            "score": 0.9,
            "samples": 1,
        },
        {
            "query_id": tag_id("both", "query"),
            "corpus_id": tag_id(normalize_tag(gone["title"])),
            "score": 0.9,
            "samples": 1,
        },
        {"query_id": tag_id("both", "query"), "corpus_id": tag_id("shared topic"), "score": 0.5, "samples": 1},
    ]
    store.run("tags/maps_to_upsert", {"pairs": pairs, "now": now})
    deleted = store.delete_document(docs[gone["id"]])
    assert deleted["tags"] == 3  # its title and key tags, and the query tag mapped only to its title
    remaining = {
        r["id"]
        for r in store.run(
            "tags/existing_tags",
            {
                "ids": [
                    tag_id(normalize_tag(gone["title"])),
                    tag_id("shared topic"),
                    tag_id("only gone", "query"),
                    tag_id("both", "query"),
                ]
            },
        )
    }
    assert remaining == {tag_id("shared topic"), tag_id("both", "query")}
    assert counts(store)[0] == 2 * (PASSAGES - 1) + 1 + 1  # + the query tag 'both'
    assert not [o for o in store.orphans() if o["label"] == "Tag"]
    for doc_id in list(docs.values()):
        store.delete_document(doc_id)
    assert counts(store) == (0, 3, 0)  # no Tag left (the classes stay: they belong to the knowledge base)


def test_failed_chunk_is_reported_and_retried(
    store: GraphStore, tag_settings: Settings, passages: list[dict[str, Any]], embedder: Embedder, tmp_path: Path
) -> None:
    path = write_corpus(tmp_path / f"f{uuid.uuid4().hex[:6]}.jsonl", passages)
    bad = passages[2]["title"]
    report = ingest(store, tag_settings, path, TaggingLLM(failing={bad}), embedder)
    t = report.tagging
    assert t is not None
    assert report.status == "completed" and report.failed == 0 and report.exit_code == 0
    assert t.asked == PASSAGES and t.tagged == PASSAGES - 1 and t.failed == 1
    assert "server is down" in t.errors[0].error
    assert set(tagged(store)) == {p["title"] for p in passages} - {bad}
    pending = pending_chunks(store)
    assert [t.errors[0].chunk_id] == pending
    # the next run asks again for that chunk only
    again = TaggingLLM()
    report = ingest(store, tag_settings, path, again, embedder)
    assert report.unchanged == PASSAGES and again.tagged_titles == [bad]
    assert report.tagging is not None and report.tagging.tagged == 1
    assert set(tagged(store)) == {p["title"] for p in passages} and not pending_chunks(store)


def test_tag_chunks_again_is_idempotent(
    store: GraphStore, tag_settings: Settings, passages: list[dict[str, Any]], embedder: Embedder, tmp_path: Path
) -> None:
    path = write_corpus(tmp_path / f"i{uuid.uuid4().hex[:6]}.jsonl", passages)
    ingest(store, tag_settings.updated({"auto_tagging": False}), path, TaggingLLM(), embedder)
    assert counts(store) == (0, 0, 0) and len(pending_chunks(store)) == PASSAGES
    ids = [r["id"] for r in store.run("tags/chunk_ids")]
    llm = TaggingLLM()
    first = tag_chunks(store, tag_settings, llm, embedder, ids)
    before = counts(store)
    second = tag_chunks(store, tag_settings, llm, embedder, ids)
    assert llm.asked == Counter({"classes": 1, "tags": 2 * PASSAGES})
    assert counts(store) == before == (2 * PASSAGES + 1, 3, 3 * PASSAGES)
    assert first.new_tags == 2 * PASSAGES + 1 and second.new_tags == 0 and second.tags == first.tags
    assert not second.classes_proposed and not pending_chunks(store)


# --- the real local LLM server --------------------------------------------------------------------------
def test_tag_chunks_with_the_local_llm(
    falkor_settings: Settings,
    llm_server: LLMServerInfo,
    passages: list[dict[str, Any]],
    embedder: Embedder,
    tmp_path: Path,
) -> None:
    """tag_chunks over 2 chunks against llama.cpp's server (SmolLM2-135M): one request per chunk is made and the
    report and the graph agree, whatever tags (maybe none) the tiny model gives. The tag classes are written
    first: the tiny model gives no usable class proposal (the same complete_json path as the chunk requests,
    under test with the scripted LLM above), and chunks are tagged only once classes exist."""
    from kbgraph.tagging import tag_class_id
    from kbgraph.ingest.write import write_documents
    from kbgraph.llm.client import get_llm
    from kbgraph.models import ChunkRecord, DocumentGraph, DocumentRecord, stable_id
    from kbgraph.store import open_store

    s = falkor_settings.updated(
        {
            "name": f"tagllm{uuid.uuid4().hex[:6]}",
            "auto_tagging": True,
            "tag_workers": 2,
            "llm_base_url": llm_server.base_url,
            "llm_model": llm_server.model,
            "llm_api_key": SecretStr("none"),
            "llm_cache_dir": tmp_path / "llm-cache",
            "llm_timeout": 300.0,
            "llm_max_tokens": 96,
        }
    )
    graphs = []
    for p in passages[:2]:
        doc_id = stable_id("doc", p["id"])
        doc = DocumentRecord(
            id=doc_id,
            uri=f"file:///t.jsonl#{p['id']}",
            title=p["title"],
            mime="application/x-passages+jsonl",
            sha256=stable_id("sha", p["text"]),
        )
        chunk = ChunkRecord(
            id=stable_id("chunk", doc_id, "0"),
            document_id=doc_id,
            parent_id=doc_id,
            text=p["text"],
            order=0,
            section_path=p["title"],
        )
        doc.embedding, chunk.embedding = (v.tolist() for v in embedder.embed([p["title"], p["text"]]))
        graphs.append(DocumentGraph(document=doc, chunks=[chunk]))
    store = open_store(s)
    try:
        store.clear()
        store.ensure_schema()
        write_documents(store, graphs)
        rows = [{"id": tag_class_id(c["name"]), **c} for c in CLASSES]
        store.write_batches("tags/upsert_classes", rows, {"now": "2025-01-01T00:00:00Z"})
        llm = get_llm(s)
        report = tag_chunks(store, s, llm, embedder, pending_chunks(store))  # type: ignore[arg-type]
        assert report.chunks == report.asked == 2 and not report.classes_proposed and report.stopped is None
        assert llm.usage.calls >= 2 and report.tagged + report.failed == 2  # type: ignore[union-attr]
        assert len(pending_chunks(store)) == report.failed
        nodes, classes, edges = counts(store)
        assert classes == 3 and edges == report.tags and nodes == report.new_tags
        hits = store.vector_search("Tag", embedder.embed(["a"])[0], k=50)
        assert len(hits) == nodes and all(h.properties["class"] in report.classes for h in hits)
    finally:
        store.clear()
        store.close()


def test_answer_schemas_bound_what_a_constrained_decoder_writes() -> None:
    """The JSON schemas sent as response_format carry maxItems / maxLength, so a small model cannot list tags
    until its token limit cuts the JSON; a longer answer (an unconstrained server) is cut, not refused."""
    from kbgraph.tagging import (
        MAX_NAME_CHARS,
        MAX_TAG_CLASSES,
        MAX_TAGS_PER_CHUNK,
        ChunkTags,
        TagClassProposal,
    )

    tags = ChunkTags.model_json_schema()
    assert tags["properties"]["tags"]["maxItems"] == MAX_TAGS_PER_CHUNK
    assert tags["$defs"]["ExtractedChunkTag"]["properties"]["name"]["maxLength"] == MAX_NAME_CHARS
    assert TagClassProposal.model_json_schema()["properties"]["tag_classes"]["maxItems"] == MAX_TAG_CLASSES
    runaway = ChunkTags.model_validate({"tags": [{"name": "n" * 500, "class": "person"}] * (MAX_TAGS_PER_CHUNK + 5)})
    assert len(runaway.tags) == MAX_TAGS_PER_CHUNK and len(runaway.tags[0].name) == MAX_NAME_CHARS
