"""The LLM half of PIKE-RAG against a real model: llama.cpp's server with SmolLM2-135M-Instruct (started once per
session by the ``llm_server`` fixture), on both stores. A 135M model answers badly: these tests check that the
machinery works with a real OpenAI-compatible server (structured outputs, token usage from the server, the
graph the answers land in, Algorithm 1's trace), never that an answer is right.

* ingestion with the LLM: atomic questions (paper 003 A.7) stored as ``AtomicQuestion {kind: 'question'}``
  with embeddings and LLM triples; on FalkorDB a prose document (the recurrent split, PIKE-RAG §5.2.1), on Neo4j
  a table (the LLM table summary); both cut from sample documents to keep the suite's time;
* a question with ``pike`` (Algorithm 1) and, on FalkorDB, each baseline: trace, citations, usage (on Neo4j
  ``pike`` and ``naive``);
* a prompt over the server's context: a clear error naming the prompt, nothing half-written.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from kbgraph.ingest.parse import parse_file
from kbgraph.ingest.report import IngestReport
from kbgraph.kb import KnowledgeBase
from kbgraph.llm import OpenAIClient
from kbgraph.llm.base import Usage
from kbgraph.models import stable_id
from kbgraph.query.models import TraceRound
from kbgraph.settings import Settings
from tests.llm_server_fixture import LLMServerInfo

FAA = "docs/pdf/faa_amt_general_handbook_sample.pdf"  # one page of prose (635 words)
PROSE_WORDS = 330  # its first 330 words, the Boots self-locking nut's section: one block, 2 chunks at 256 words
SENATE = "docs/pdf/us_senate_expenditures.pdf"  # one ledger table (903 words)
TABLE_ROWS = 14  # its header and first 14 rows (321 words, 5 of them travel) as a Markdown table: one table chunk
QUESTIONS = [
    "What kind of nut is the Boots self-locking nut, and what keeps its locking section apart from the load section?",
    "Which office spent money on travel according to the Senate expenditure ledger, and how much?",
]
METHODS = ("pike", "naive", "naive_hr", "self_ask", "cot")
ROUNDS = 2  # Algorithm 1's N for these tests (the loop's machinery is the same at 5)


@pytest.fixture(scope="module", autouse=True)
def _answer_budget_of_llm_max_tokens() -> Iterator[None]:
    """JSON answers get max_tokens 120 here (llm_max_tokens), not the bounded schema's budget: SmolLM2-135M fills
    every bound it is given (ExtractedKnowledge allows 2,281 tokens, AtomicQuestions 954), which makes this
    module's ingestions take over 20 minutes per store on two cores (at 200 tokens, 149 s for the prose on one
    thread; at 120, ~110 s: most answers are cut either way, and then salvaged, repaired or fall back to the
    offline extraction, which the tests allow). What is tested here is the machinery against
    a real server; the schema-sized budget and the model completing its bounded JSON are
    tests/test_llm_bounds.py and tests/test_llm_real_bounds.py."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("kbgraph.llm.base.token_budget", lambda schema: 0)
        yield


class LLMKnowledgeBase(KnowledgeBase):
    """The module's knowledge base with what its one ingestion gave: the prose or the table file and the store it
    ran on, the report, the LLM's usage and JSON report (``llm_kb_on``)."""

    prose: Path | None
    table: Path | None
    test_store: str
    ingest_report: IngestReport
    ingest_usage: Usage
    ingest_json: dict[str, dict[str, float]]


def llm_kb_on(
    store: str, base: Settings, llm_server: LLMServerInfo, tmp_path_factory: pytest.TempPathFactory, examples_dir: Path
) -> Iterator[LLMKnowledgeBase]:
    """A knowledge base on ``base``'s store whose LLM is the real local server, with the documents ingested by it
    once (a fresh response cache: every answer is a real request); yields it, then resets it. tests/
    test_llm_real_neo4j.py runs this module's knowledge-base tests on Neo4j (a module of its own, so that
    pytest-xdist can run it on the other worker: the two LLM ingestions are the suite's longest steps)."""
    settings = base.updated(
        {
            "llm_base_url": llm_server.base_url,
            "llm_model": llm_server.model,
            "llm_api_key": SecretStr("none"),
            "llm_cache_dir": tmp_path_factory.mktemp("llm-cache"),
            "llm_timeout": 300.0,
            "llm_max_tokens": 120,
            "chunk_tokens": 256,
            "llm_chunk_window_tokens": 300,
            "decompose_rounds": ROUNDS,
            "self_ask_rounds": 2,
        }
    )
    kb = LLMKnowledgeBase(settings=settings)
    kb.reset()
    # the prose on FalkorDB, the table on Neo4j: the LLM ingestions are the suite's longest steps (one LLM server
    # thread per pytest-xdist worker), and what differs by store is the writing, which either exercises
    kb.prose = kb.table = None
    if store == "falkordb":
        kb.prose = _prose(examples_dir / FAA, tmp_path_factory.mktemp("prose") / "boots_self_locking_nut.txt")
    else:
        kb.table = _table(examples_dir / SENATE, tmp_path_factory.mktemp("table") / "senate_expenditures.md")
    kb.test_store = store
    report = kb.ingest([p for p in (kb.prose, kb.table) if p], progress=False)
    kb.ingest_report = report
    llm = kb.llm
    assert isinstance(llm, OpenAIClient)  # the real server's client
    kb.ingest_usage = llm.usage.model_copy()
    kb.ingest_json = llm.json_report()
    yield kb
    kb.reset()
    kb.close()


@pytest.fixture(scope="module")
def llm_kb(
    falkor_settings: Settings, llm_server: LLMServerInfo, tmp_path_factory: pytest.TempPathFactory, examples_dir: Path
) -> Iterator[LLMKnowledgeBase]:
    """The LLM knowledge base on the embedded FalkorDB (tests/test_llm_real_neo4j.py: on Neo4j)."""
    yield from llm_kb_on(
        "falkordb",
        falkor_settings.updated({"name": f"llm{uuid.uuid4().hex[:8]}"}),
        llm_server,
        tmp_path_factory,
        examples_dir,
    )


def _prose(pdf: Path, out: Path) -> Path:
    """The first PROSE_WORDS words of ``pdf``'s text (as kbgraph's parser reads it) as one paragraph in the text
    file ``out``."""
    words = " ".join(e.text for e in parse_file(pdf, max_bytes=10_000_000).elements).split()
    out.write_text(" ".join(words[:PROSE_WORDS]) + "\n", encoding="utf-8")
    return out


def _table(pdf: Path, out: Path) -> Path:
    """The first TABLE_ROWS rows of ``pdf``'s first table (as kbgraph's parser reads it: Markdown, a header row)
    in the Markdown file ``out``."""
    [table] = [e for e in parse_file(pdf, max_bytes=10_000_000).elements if e.kind == "table"][:1]
    out.write_text("\n".join(table.text.splitlines()[: 2 + TABLE_ROWS]) + "\n", encoding="utf-8")
    return out


def _document(kb: KnowledgeBase, path: Path) -> list[dict[str, Any]]:
    return kb.browse("document", document=stable_id("doc", path.resolve().as_uri()), limit=10_000, per_chunk=1_000)


def test_ingestion_with_a_real_llm_builds_the_llm_layers(llm_kb: LLMKnowledgeBase) -> None:
    report = llm_kb.ingest_report
    assert report.errors == [] and report.added == 1, report.errors
    llm, usage = llm_kb.llm, llm_kb.ingest_usage
    assert isinstance(llm, OpenAIClient)
    assert usage.calls > 0 and usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.cached_calls < usage.calls  # a repeated identical request may come from the response cache
    prose = _document(llm_kb, llm_kb.prose) if llm_kb.prose else []
    table = _document(llm_kb, llm_kb.table) if llm_kb.table else []
    assert len(prose) >= 2 if llm_kb.prose else table
    # the recurrent split was asked for the prose (its one block is longer than chunk_tokens); where the model's
    # cut was usable its chunks carry its summary, else that window fell back to the offline split (no summary)
    summaries = [r["chunk"].get("summary") for r in prose]
    assert all(s is None or (isinstance(s, str) and s.strip()) for s in summaries), summaries  # no empty summary
    # the table chunk carries the LLM's summary (not the deterministic one, which starts 'Table with')
    tables = [r["chunk"] for r in table if r["chunk"]["kind"] == "table"]
    assert all(t.get("summary") for t in tables) and (tables or not llm_kb.table)
    questions = [(r["chunk"]["id"], q) for r in prose + table for q in r["questions"]]
    llm_questions = [(cid, q) for cid, q in questions if q.get("kind") == "question"]
    # (a 135M model often writes statements where questions are asked for: they are dropped, so a chunk may
    # have none; what is stored must be a question)
    for _cid, q in llm_questions:  # strings ending in '?', tied (HAS_QUESTION) to their chunk's row
        assert isinstance(q["text"], str) and q["text"].strip().endswith("?"), q["text"]
    # ... and embedded: browse rows carry no vectors, so the store is asked for each one's similarity (it answers
    # only for a question with a stored embedding of the KB's dimension)
    probe = llm_kb.embedder.embed(["a probe"])[0].tolist()
    embedded = llm_kb.store.atomic_question_similarities([q["id"] for _cid, q in llm_questions], probe)
    assert set(embedded) == {q["id"] for _cid, q in llm_questions}, embedded
    stats = llm_kb.stats()
    assert stats.nodes["Chunk"] == len(prose) + len(table)
    # the chunks went through the LLM's atomic-question prompt (and, where that answer was usable, the triple
    # prompt); long blocks through the recurrent split, tables with a header through the summary prompt. An
    # identical request may come from the response cache; an answer still unusable after its repair falls
    # back to the offline extraction for that chunk.
    json_report = llm_kb.ingest_json
    asked = {p: r["answers"] + r["failed"] for p, r in json_report.items()}
    assert 1 <= asked.get("AtomicQuestions", 0) <= stats.nodes["Chunk"], asked
    assert asked.get("ExtractedKnowledge", 0) <= asked["AtomicQuestions"], asked
    assert set(asked) <= {"AtomicQuestions", "ExtractedKnowledge", "WindowSplit", "TableSummary"}, asked
    assert asked.get("WindowSplit", 0) >= (1 if llm_kb.prose else 0), asked  # the prose's block was split
    assert asked.get("TableSummary", 0) >= (1 if llm_kb.table else 0), asked
    assert llm._formats.get(f"{llm.endpoint}|{llm.default_model}") == "json_schema"  # llama-server takes it


def test_multi_hop_questions_with_a_real_llm(llm_kb: LLMKnowledgeBase) -> None:
    """A question with Algorithm 1 and with each baseline: the answer is the server's (usage > 0, nothing from
    the cache), every citation is a chunk of the graph, and pike's trace shows its rounds, proposals,
    candidates from the graph above δ and the selected chunk."""
    from kbgraph.query.graph import chunk_details

    store = llm_kb.store
    # FalkorDB: the prose's question with pike and each baseline; Neo4j: the table's question with pike and naive
    # (the suite's time on a 2-core machine; the methods' machinery does not depend on the store)
    asks = [(m, QUESTIONS[0]) for m in METHODS]
    if llm_kb.test_store != "falkordb":
        asks = [("pike", QUESTIONS[1]), ("naive", QUESTIONS[1])]
    for method, question in asks:
        answer = llm_kb.ask(question, method=method)
        assert answer.method == method and isinstance(answer.answer, str) and not answer.retrieval_only
        u = answer.usage
        # the server's own usage; a request identical to an earlier method's (naive_hr's answer prompt can be
        # naive's) is served from the response cache and counted as such
        assert u.calls + u.cached_calls > 0, method
        assert (u.prompt_tokens > 0 and u.completion_tokens > 0) == (u.calls > 0), method
        cited = [c.chunk_id for c in answer.citations]
        if method == "cot":
            assert cited == []  # chain of thought retrieves nothing
        found = chunk_details(store, cited)
        assert set(cited) <= set(found), f"{method}: a citation names a chunk that is not in the graph"
        if method != "pike":
            continue
        assert 1 <= len(answer.trace) <= ROUNDS
        trace = [r for r in answer.trace if isinstance(r, TraceRound)]
        assert trace == answer.trace  # pike's rounds
        delta = llm_kb.settings.decompose.decompose_threshold
        for i, rnd in enumerate(trace, start=1):
            assert rnd.round == i
            if rnd.candidates:
                assert all(c.score >= delta - 1e-6 for c in rnd.candidates)  # δ applied
                assert set(chunk_details(store, [c.chunk_id for c in rnd.candidates])) == {
                    c.chunk_id for c in rnd.candidates
                }  # candidates come from the graph
            if rnd.selected is not None:
                assert rnd.chunk_id in {c.chunk_id for c in rnd.candidates}
        assert {c.id for c in answer.chunks} == {r.chunk_id for r in trace if r.chunk_id}


def test_a_prompt_over_the_context_is_a_clear_error_and_nothing_is_half_written(
    backend_settings: Settings, llm_server: LLMServerInfo, tmp_path: Path
) -> None:
    """One paragraph of ~9,000 words in one chunk: its atomic-question prompt cannot fit the server's context.
    The document fails with a message naming the prompt and its size; the small file beside it is ingested."""
    words = ("The anchor nut holds the bracket while the spring keeps the sections apart. " * 700).strip()
    big = tmp_path / "docs" / "big.txt"
    big.parent.mkdir()
    big.write_text(words, encoding="utf-8")
    small = tmp_path / "docs" / "small.txt"
    small.write_text("Elastic stop nuts use a fiber collar. They are reusable a few times.", encoding="utf-8")
    settings = backend_settings.updated(
        {
            "llm_base_url": llm_server.base_url,
            "llm_model": llm_server.model,
            "llm_api_key": SecretStr("none"),
            "llm_cache_dir": tmp_path / "llm-cache",
            "llm_timeout": 300.0,
            "llm_max_tokens": 64,
            "chunk_tokens": 20_000,
            "llm_chunking": False,
        }
    )
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()
        report = kb.ingest([big.parent], progress=False)
        assert report.added == 1 and report.failed == 1
        [err] = report.errors
        assert err.path.endswith("big.txt")
        assert "prompt has" in err.error and "tokens" in err.error and "context" in err.error
        assert "\n" not in err.error
        assert kb.stats().nodes.get("Document") == 1  # only small.txt: nothing of big.txt was left behind
        assert kb.browse("document", document=stable_id("doc", big.resolve().as_uri()), limit=10, per_chunk=0) == []
        assert kb.store.orphans() == []
        kb.reset()
