"""Auto-tagging, query side (PIKE-RAG §5.2.2): tag-pair learning (kbgraph.eval.tag_pairs), question tags
mapped through MAPS_TO and the Tag vector index (kbgraph.query.tags), the Tag layer of score propagation
(kbgraph.query.propagation.propagate), on both real stores with real embeddings: a hand-built five-passage graph with
corpus tags, a scripted LLM that reads the prompts, and one run against the real local LLM server.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import pytest

from kbgraph.embed.base import Embedder
from kbgraph.llm.base import LLM, Messages
from kbgraph.llm.fake import ScriptedLLM
from kbgraph.models import ChunkRecord, DocumentGraph, DocumentRecord, stable_id
from kbgraph.query.context import QueryContext
from kbgraph.query.models import Contribution
from kbgraph.query.methods.retrieval import retrieve_propagation
from kbgraph.eval.tag_pairs import learn_tag_pairs, load_qa_samples
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore, Row
from kbgraph.tagging import normalize_tag, tag_class_id, tag_id
from kbgraph.query.tags import question_tags
from tests.llm_server_fixture import LLMServerInfo

HOSTILE = "x\"}) MATCH (n) DETACH DELETE n // {braces} 'quote'"
PASSAGES = [  # (passage id, title, text, [(corpus tag, class)])
    (
        "p1",
        "Myocardial infarction",
        "Myocardial infarction results from the occlusion of a coronary artery, "
        "which leaves part of the heart muscle without oxygen.",
        [("myocardial infarction", "Disease"), ("coronary artery", "Anatomy")],
    ),
    (
        "p2",
        "Hypertension",
        "Hypertension is a chronically elevated arterial blood pressure, a risk factor for stroke and kidney disease.",
        [("hypertension", "Disease"), ("arterial blood pressure", "Measurement")],
    ),
    (
        "p3",
        "Influenza",
        "Influenza is a viral infection of the respiratory tract with fever and myalgia.",
        [("influenza", "Disease"), ("myalgia", "Symptom")],
    ),
    (
        "p4",
        "Renal failure",
        "Renal failure is the loss of the kidneys' ability to filter waste from the blood.",
        [("renal failure", "Disease"), (HOSTILE, "Disease")],
    ),
    ("p5", "Copenhagen", "Copenhagen is the capital of Denmark, on the islands of Zealand and Amager.", []),
]
CLASSES = [
    ("Disease", "a named illness"),
    ("Symptom", "what a patient feels"),
    ("Anatomy", "a body part"),
    ("Measurement", "a clinical measurement"),
]
QUESTION = "What happens in a heart attack?"


@pytest.fixture(scope="module")
def embedder(falkor_settings: Settings) -> Embedder:
    from kbgraph.embed import get_embedder

    return get_embedder(falkor_settings)


class Graph(TypedDict):
    """What ``build_graph`` wrote: chunk ids by passage id, the corpus tags' names."""

    chunks: dict[str, str]
    tags: list[str]


@pytest.fixture
def graph(store: GraphStore, embedder: Embedder) -> Graph:
    """The five passages as Documents + Chunks with URIs '...#p<i>', their corpus Tags and the TagClasses."""
    return build_graph(store, embedder)


def build_graph(store: GraphStore, embedder: Embedder) -> Graph:
    """Write the five passages, their corpus Tags and the TagClasses; chunk ids by passage and tag rows by name."""
    from kbgraph.ingest.write import write_documents

    graphs: list[DocumentGraph] = []
    chunk_of: dict[str, str] = {}
    for pid, title, text, _ in PASSAGES:
        doc = DocumentRecord(
            id=stable_id("doc", pid),
            uri=f"file:///qa/corpus.jsonl#{pid}",
            title=title,
            mime="application/x-passages+jsonl",
            sha256=stable_id("sha", text),
        )
        chunk = ChunkRecord(
            id=stable_id("chunk", pid), document_id=doc.id, parent_id=doc.id, text=text, order=0, section_path=title
        )
        chunk_of[pid] = chunk.id
        graphs.append(DocumentGraph(document=doc, chunks=[chunk]))
    records = [r for g in graphs for r in (g.document, *g.chunks)]
    for rec, vec in zip(records, embedder.embed([getattr(r, "text", None) or r.title for r in records]), strict=True):  # type: ignore[attr-defined]
        rec.embedding = vec.tolist()  # type: ignore[attr-defined]
    write_documents(store, graphs)
    tags = [(pid, name, cls) for pid, _, _, tagged in PASSAGES for name, cls in tagged]
    vectors = embedder.embed([name for _, name, _ in tags])
    rows = [
        {
            "id": tag_id(normalize_tag(name)),
            "name": name,
            "norm": normalize_tag(name),
            "class": cls,
            "embedding": store.check_vector(v.tolist()),
        }
        for (_, name, cls), v in zip(tags, vectors, strict=True)
    ]
    now = {"now": "2025-01-01T00:00:00Z"}
    store.write_batches(
        "tags/upsert_classes", [{"id": tag_class_id(n), "name": n, "description": d} for n, d in CLASSES], now
    )
    store.write_batches("tags/upsert_tags", rows, now)
    store.write_batches(
        "tags/link_tagged",
        [{"chunk_id": chunk_of[pid], "tag_id": tag_id(normalize_tag(name))} for pid, name, _ in tags],
    )
    _await_tag_index(store, vectors[0])
    return {"chunks": chunk_of, "tags": [name for _, name, _ in tags]}


def _await_tag_index(store: GraphStore, vec: np.ndarray) -> None:
    """Neo4j fills a new vector index asynchronously: wait until it answers."""
    import time

    for _ in range(100):
        if store.run("retrieve/seed_tags", {"tags": [{"norm": "probe", "embedding": vec.tolist()}], "k": 1}):
            return
        time.sleep(0.1)
    raise AssertionError("the Tag vector index never answered")


def responder(
    question_tags: dict[str, list[tuple[str, str]]], pairs: list[dict[str, Any]], log: list[str] | None = None
) -> Callable[[Messages], str]:
    """A scripted LLM: the question-tag prompt answers ``question_tags[question]`` (default []), the tag-pair
    prompt answers ``pairs`` (those whose tags were offered in the prompt)."""

    def answer(messages: Messages) -> str:
        user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        if log is not None:
            log.append(user)
        question = re.search(r"# Question\n(.*?)\n#", user, re.S).group(1).strip()  # type: ignore[union-attr]
        if "semantic tags of the question" in user:
            return json.dumps({"tags": [{"name": n, "class": c} for n, c in question_tags.get(question, [])]})
        assert "Map each tag of the question" in user
        return json.dumps({"pairs": pairs})

    return answer


def _ctx(store: GraphStore, settings: Settings, embedder: Embedder, llm: LLM | None, **update: Any) -> QueryContext:
    return QueryContext(store, settings.updated({"auto_tagging": True, **update}), embedder, llm)


def _pairs(store: GraphStore) -> list[Row]:
    return store.run("tags/maps_to_list")


# --- tag-pair collection ----------------------------------------------------------------------------------
def test_learn_pairs_writes_maps_to_and_relearning_updates(
    store: GraphStore, backend_settings: Settings, embedder: Embedder, graph: Graph, tmp_path: Path
) -> None:
    qa = tmp_path / "qa.jsonl"
    lines = [
        {"question": QUESTION, "chunk_ids": [graph["chunks"]["p1"]]},
        {"question": "Is a heart attack deadly?", "gold_passage_ids": ["p1"]},
    ]
    qa.write_text("".join(json.dumps(line) + "\n" for line in lines))
    tags = {QUESTION: [("heart attack", "Disease")], "Is a heart attack deadly?": [("Heart  Attack.", "Disease")]}
    pairs = [
        {"question_tag": "heart attack", "corpus_tag": "myocardial infarction", "score": 0.9},
        {"question_tag": "heart attack", "corpus_tag": "coronary artery", "score": 40},  # a percentage
        {"question_tag": "heart attack", "corpus_tag": "influenza", "score": 1.0},  # not a gold chunk's tag
        {"question_tag": "chest pain", "corpus_tag": "myocardial infarction", "score": 1.0},
    ]  # not extracted
    llm = ScriptedLLM(responder(tags, pairs))
    report = learn_tag_pairs(_ctx(store, backend_settings, embedder, llm), qa)
    assert (report.samples, report.learned, report.skipped, report.query_tags) == (2, 2, {}, 1)
    assert report.usage.calls == 4 and report.usage.prompt_tokens > 0
    got = {(r["query_tag"], r["corpus_tag"]): (r["score"], r["samples"]) for r in _pairs(store)}
    assert got == {
        ("heart attack", "myocardial infarction"): (pytest.approx(0.9), 2),
        ("heart attack", "coronary artery"): (pytest.approx(0.4), 2),
    }
    row = _pairs(store)[0]
    assert row["query_id"] == stable_id("tag", "query", "heart attack") and row["query_side"] == "query"
    assert row["corpus_side"] == "corpus"

    pairs[0]["score"] = 0.6  # re-learning: new scores, no second node or edge
    again = learn_tag_pairs(
        _ctx(store, backend_settings, embedder, ScriptedLLM(responder(tags, pairs))), load_qa_samples(qa)[:1]
    )
    assert again.edges == 2
    got = {(r["query_tag"], r["corpus_tag"]): (r["score"], r["samples"]) for r in _pairs(store)}
    assert got[("heart attack", "myocardial infarction")] == (pytest.approx(0.6), 1) and len(_pairs(store)) == 2
    assert store.stats().nodes["Tag"] == len(graph["tags"]) + 1


def test_learn_skips_samples_without_gold_tags(
    store: GraphStore, backend_settings: Settings, embedder: Embedder, graph: Graph
) -> None:
    llm = ScriptedLLM(responder({}, []))
    samples = [
        {"question": "Where is Copenhagen?", "gold_passage_ids": ["p5"]},  # untagged passage
        {"question": "?", "gold_passage_ids": ["nowhere"]},
        {"question": QUESTION, "chunk_ids": [graph["chunks"]["p1"]]},
    ]  # no question tag extracted
    report = learn_tag_pairs(_ctx(store, backend_settings, embedder, llm), samples)
    assert report.learned == 0 and sum(report.skipped.values()) == 3 and len(report.skipped) == 3
    assert len(llm.calls) == 1 and _pairs(store) == []


# --- query time --------------------------------------------------------------------------------------------
def _learn(store: GraphStore, settings: Settings, embedder: Embedder, graph: Graph, score: float = 0.9) -> None:
    tags = {QUESTION: [("heart attack", "Disease")]}
    pairs = [{"question_tag": "heart attack", "corpus_tag": "myocardial infarction", "score": score}]
    llm = ScriptedLLM(responder(tags, pairs))
    learn_tag_pairs(_ctx(store, settings, embedder, llm), [{"question": QUESTION, "gold_passage_ids": ["p1"]}])


def test_question_tags_map_through_maps_to_and_vector_index(
    store: GraphStore, backend_settings: Settings, embedder: Embedder, graph: Graph
) -> None:
    _learn(store, backend_settings, embedder, graph)
    tags = {QUESTION: [("heart attack", "Disease"), ("high blood pressure", ""), ("Copenhagen", "")]}
    ctx = _ctx(store, backend_settings, embedder, ScriptedLLM(responder(tags, [])), tag_vector_k=2, tag_threshold=0.6)
    mapping = question_tags(QUESTION, ctx)
    assert [t.name for t in mapping.question_tags] == ["heart attack", "high blood pressure", "Copenhagen"]  # type: ignore[union-attr]
    got = {m.name: (m.how, m.via, m.score) for m in mapping.mapped}  # type: ignore[union-attr]
    assert got["myocardial infarction"][:2] == ("maps_to", "heart attack") and got["myocardial infarction"][2] == 0.9
    # independently: the cosine of each question tag with each corpus tag, kept when >= the threshold, top 2
    names = graph["tags"]
    qv, cv = embedder.embed(["heart attack", "high blood pressure", "Copenhagen"]), embedder.embed(names)
    expected: dict[str, tuple[str, float]] = {}
    for q, sims in zip(
        ["heart attack", "high blood pressure", "Copenhagen"], np.asarray(qv) @ np.asarray(cv).T, strict=True
    ):
        for i in np.argsort(-sims)[:2]:
            if sims[i] >= 0.6 and (names[i] not in expected or sims[i] > expected[names[i]][1]):
                expected[names[i]] = (q, float(sims[i]))
    vector = {n: (v, s) for n, (how, v, s) in got.items() if how == "vector"}
    assert "hypertension" in expected or "arterial blood pressure" in expected  # the fixture means something
    assert set(vector) == set(expected) - {"myocardial infarction"}
    for name, (via, sim) in vector.items():
        assert via == expected[name][0] and sim == pytest.approx(expected[name][1], abs=1e-3)
    assert mapping.rewrite(QUESTION).startswith(QUESTION + " myocardial infarction")  # type: ignore[union-attr]


def test_tag_layer_in_explain_and_off_is_identical(
    store: GraphStore, backend_settings: Settings, embedder: Embedder, graph: Graph
) -> None:
    # the Tag term of the weighted sum (the learned ranker re-orders the same terms: tests/test_ranking.py)
    backend_settings = backend_settings.updated({"ranker": "weights"})
    _learn(store, backend_settings, embedder, graph, score=0.8)
    tags = {QUESTION: [("heart attack", "Disease")]}
    base = QueryContext(store, backend_settings, embedder, None)
    before = retrieve_propagation(QUESTION, base, k=5, explain=True)
    for ctx in (
        _ctx(store, backend_settings, embedder, None),  # on, but no LLM
        QueryContext(store, backend_settings, embedder, ScriptedLLM([])),
    ):  # an LLM, auto_tagging off
        assert retrieve_propagation(QUESTION, ctx, k=5, explain=True) == before
    weight = 0.25
    llm = ScriptedLLM(responder(tags, []))
    on = _ctx(store, backend_settings, embedder, llm, weight_tag=weight, tag_vector_k=0)
    after = retrieve_propagation(QUESTION, on, k=5, explain=True)
    p1 = next(c for c in after if c.id == graph["chunks"]["p1"])
    tag_terms = [t for t in p1.breakdown if t.term == "Tag"]
    assert len(tag_terms) == 1 and tag_terms[0].text == "myocardial infarction"
    assert tag_terms[0].score == pytest.approx(weight * 0.8) and tag_terms[0].similarity == pytest.approx(0.8)
    for chunk in after:
        assert sum(t.score for t in chunk.breakdown) == pytest.approx(chunk.score)
    old = next(c for c in before if c.id == p1.id)
    # the rewrite adds 'myocardial infarction' to the full-text query: that term may change too
    assert p1.score > old.score + weight * 0.8 - 1e-9
    assert all(t.term != "Tag" for c in after if c.id != p1.id for t in c.breakdown)
    # no Tag weight and no rewrite: nothing is asked
    quiet = ScriptedLLM([])
    ctx = _ctx(store, backend_settings, embedder, quiet, weight_tag=0.0, tag_rewrite=False)
    assert retrieve_propagation(QUESTION, ctx, k=5, explain=True) == before and quiet.calls == []


def test_mapped_tags_rewrite_the_fulltext_query(
    store: GraphStore, backend_settings: Settings, embedder: Embedder, graph: Graph
) -> None:
    """'flu' shares no word with the influenza passage; its mapped tag 'influenza' does (weight_tag 0: only the
    rewrite uses the tags)."""
    flu = "Why do people get flu?"
    tags = {flu: [("flu", "Disease")]}
    pairs = [{"question_tag": "flu", "corpus_tag": "influenza", "score": 0.7}]
    learn_tag_pairs(
        _ctx(store, backend_settings, embedder, ScriptedLLM(responder(tags, pairs))),
        [{"question": flu, "gold_passage_ids": ["p3"]}],
    )
    p3 = graph["chunks"]["p3"]

    def fulltext_of_p3(**update: Any) -> list[Contribution]:
        ctx = _ctx(
            store,
            backend_settings,
            embedder,
            ScriptedLLM(responder(tags, [])),
            weight_tag=0.0,
            tag_vector_k=0,
            **update,
        )
        chunks = retrieve_propagation(flu, ctx, k=5, explain=True)
        return [t for c in chunks if c.id == p3 for t in c.breakdown if t.term == "FullText"]

    assert fulltext_of_p3(tag_rewrite=False) == []
    assert len(fulltext_of_p3(tag_rewrite=True)) == 1


def test_hostile_tag_text_is_a_parameter(
    store: GraphStore, backend_settings: Settings, embedder: Embedder, graph: Graph
) -> None:
    tags = {QUESTION: [(HOSTILE, 'Disease"}) RETURN 1 //')]}
    pairs = [{"question_tag": HOSTILE, "corpus_tag": HOSTILE, "score": 1}]
    nodes = store.stats().total_nodes
    report = learn_tag_pairs(
        _ctx(store, backend_settings, embedder, ScriptedLLM(responder(tags, pairs))),
        [{"question": QUESTION, "gold_passage_ids": ["p4"]}],
    )
    assert report.edges == 1 and store.stats().total_nodes == nodes + 1
    assert [(r["query_tag"], r["corpus_tag"]) for r in _pairs(store)] == [(HOSTILE, HOSTILE)]
    ctx = _ctx(store, backend_settings, embedder, ScriptedLLM(responder(tags, [])), tag_vector_k=0)
    chunks = retrieve_propagation(QUESTION, ctx, k=5, explain=True)
    p4 = next(c for c in chunks if c.id == graph["chunks"]["p4"])
    assert [t.text for t in p4.breakdown if t.term == "Tag"] == [HOSTILE]
    assert store.stats().total_nodes == nodes + 1


# --- the real local LLM server ------------------------------------------------------------------------------
def test_learn_and_ask_with_the_local_llm(
    falkor_settings: Settings,
    embedder: Embedder,
    llm_server: LLMServerInfo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Machinery only (a 135M model): learning on 2 samples and a tagged ask complete, usage is recorded. JSON
    answers get llm_max_tokens (96), not the bounded schema's budget: SmolLM2-135M fills every bound it is given
    (1,554 tokens for one tag answer, ~80 s of this test on two cores); the schema-sized budget with the real
    model is tests/test_llm_real_bounds.py."""
    monkeypatch.setattr("kbgraph.llm.base.token_budget", lambda schema: 0)
    import uuid

    from pydantic import SecretStr

    from kbgraph.kb import KnowledgeBase

    settings = falkor_settings.updated(
        {
            "name": f"tq{uuid.uuid4().hex[:8]}",
            "auto_tagging": True,
            "tag_threshold": 0.0,
            "llm_base_url": llm_server.base_url,
            "llm_model": llm_server.model,
            "llm_api_key": SecretStr("none"),
            "llm_cache_dir": tmp_path / "llm-cache",
            "llm_timeout": 300.0,
            "llm_max_tokens": 96,
        }
    )
    with KnowledgeBase(settings=settings) as kb:
        kb.store.clear()
        kb.store.ensure_schema()
        build_graph(kb.store, embedder)
        samples = [
            {"question": QUESTION, "gold_passage_ids": ["p1"]},
            {"question": "Is high blood pressure a risk?", "gold_passage_ids": ["p2"]},
        ]
        report = learn_tag_pairs(kb, samples)
        assert report.samples == 2 and report.usage.calls >= 2 and report.usage.completion_tokens > 0
        assert report.learned + sum(report.skipped.values()) == 2
        answer = kb.ask(QUESTION, method="propagation", explain=True)
        # the question's tag prompt was asked while learning: the ask may be answered from the LLM cache
        assert answer.chunks and answer.usage.calls + answer.usage.cached_calls >= 1
        kb.reset()
