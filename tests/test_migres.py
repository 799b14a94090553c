"""MIGRES (paper 002 §3; kbgraph.query.methods.migres) on a real embedded FalkorDB graph of 24 MuSiQue passages (the two
gold passages of a 2-hop question and others), real embeddings, and a scripted LLM that reads the prompts and
answers like the paper's cases: answerable at once; missing information, new queries, then answerable; the
filter rejects every chunk and the LLM's own knowledge is prompted (§4.5); the iteration cap. Every kept chunk
and sentence is checked against an independent recomputation of its cosine, every citation against the graph.
One case on Neo4j, one run against the real local LLM server.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kbgraph.embed.base import Embedder
from kbgraph.ingest.write import write_documents
from kbgraph.llm.base import Messages
from kbgraph.llm.fake import ScriptedLLM
from kbgraph.models import DocumentGraph
from kbgraph.query.methods import migres
from kbgraph.query.context import QueryContext
from kbgraph.query.evidence import sentences
from kbgraph.query.methods.migres import answer_migres
from kbgraph.query.models import Answer, AskEvent, MigresRound
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore
from kbgraph.text import index_text
from tests.graph_kb import loaded_store, user_message
from tests.llm_server_fixture import LLMServerInfo
from tests.traces import trace_of

Q_ID = "2hop__150763_14904"  # Journal of Psychotherapy Integration -> American Psychological Association -> Hall
HOP2 = "Who was the first president of the American Psychological Association?"
FACT1 = "The Journal of Psychotherapy Integration is published by the American Psychological Association."
FACT2 = "G. Stanley Hall was the first president of the American Psychological Association."
MISSING = "The first president of the American Psychological Association."
THETA = 0.4  # the tests' θ: measured cosines put the two gold passages above it for their hop (see _kept)


# --- the graph ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def corpus(examples_dir: Path) -> dict[str, Any]:
    base = examples_dir / "multihop" / "musique"
    questions = {q["id"]: q for q in map(json.loads, (base / "hipporag_train100.questions.jsonl").open())}
    passages = [json.loads(line) for line in (base / "hipporag_train100.corpus.jsonl").open()]
    gold = questions[Q_ID]["gold_passage_ids"]
    chosen = [p for p in passages if p["id"] in gold] + [p for p in passages if p["id"] not in gold][:22]
    return {"passages": chosen, "question": questions[Q_ID]["question"]}


@pytest.fixture(scope="module")
def graphs(corpus: dict[str, Any], falkor_settings: Settings) -> tuple[list[DocumentGraph], Embedder]:
    """One Document + one Chunk per passage, the chunk embedded from its index text as ingestion does
    (no atomic questions or entities: MIGRES reads chunks; built by hand to keep this file fast)."""
    from kbgraph.embed import get_embedder
    from kbgraph.models import ChunkRecord, DocumentRecord, stable_id

    embedder = get_embedder(falkor_settings)
    out: list[DocumentGraph] = []
    for p in corpus["passages"]:
        doc_id = stable_id("doc", p["id"])
        doc = DocumentRecord(
            id=doc_id,
            uri=f"musique:{p['id']}",
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
            section_path="",
        )
        out.append(DocumentGraph(document=doc, chunks=[chunk]))
    vecs = embedder.embed([index_text(g.document.title, "", "text", g.chunks[0].text, None) for g in out])
    for g, vec in zip(out, vecs, strict=True):
        g.chunks[0].embedding = vec.tolist()
    return out, embedder


#: (store, settings with θ = THETA, embedder)
KB = tuple[GraphStore, Settings, Embedder]


@pytest.fixture(scope="module")
def kb(falkor_settings: Settings, graphs: tuple[list[DocumentGraph], Embedder]) -> Iterator[KB]:
    """(store, settings with θ = THETA, embedder) on a FalkorDB graph of its own."""
    settings = falkor_settings.updated({"name": f"mig{uuid.uuid4().hex[:8]}", "migres_threshold": THETA})
    with loaded_store(settings, graphs[0]) as store:
        yield store, settings, graphs[1]


# --- a scripted LLM that reads the prompts -----------------------------------------------------------------
def _kind(messages: Messages) -> str:
    text = user_message(messages)
    for marker, kind in (
        ("Answer the Question based solely on the provided Information", "main"),
        ("write no more than 3 queries", "query"),
        ("distillate useful information", "leaf"),
        ("Generation relevant information", "knowledge"),
        ("Your task is to answer a question referring to a given context", "solve"),
    ):
        if marker in text:
            return kind
    raise AssertionError(f"unexpected prompt: {text[:200]}")


def passages_of(prompt: str) -> list[str]:
    """The titles (or, for LLM knowledge, the text) of the Leaf prompt's passages, by index."""
    return [m.group(2) or m.group(3) for m in re.finditer(r"^Passage (\d+): (?:\(Title: ([^)]*)\)|(.*))", prompt, re.M)]


#: a scripted answer: text, a JSON object, or a function of the prompt giving either
Reply = str | dict[str, Any] | Callable[[str], str | dict[str, Any]]


class Script:
    """Responder for ScriptedLLM. Per kind, a list of answers used in turn (the last one repeats); an answer
    may be a function of the prompt. Records the kinds and prompts."""

    def __init__(self, **answers: Iterable[Reply]) -> None:
        self.answers: dict[str, list[Reply]] = {k: list(v) for k, v in answers.items()}
        self.kinds: list[str] = []
        self.prompts: list[str] = []
        self._n: dict[str, int] = {}

    def __call__(self, messages: Messages) -> str:
        kind, prompt = _kind(messages), user_message(messages)
        self.kinds.append(kind)
        self.prompts.append(prompt)
        i = self._n.get(kind, 0)
        self._n[kind] = i + 1
        options = self.answers.get(kind) or [{"answer": "scripted", "rationale": "solve"}]
        item = options[min(i, len(options) - 1)]
        item = item(prompt) if callable(item) else item
        return item if isinstance(item, str) else json.dumps(item)

    def prompt(self, kind: str, n: int = 0) -> str:
        return [p for k, p in zip(self.kinds, self.prompts, strict=True) if k == kind][n]


def cite(title: str, info: str) -> Callable[[str], dict[str, Any]]:
    """A Leaf answer: ``info`` citing the passage titled ``title`` (wherever the prompt put it)."""
    return lambda prompt: {
        "useful_information": [{"info": info, "support_passages": [passages_of(prompt).index(title)]}]
    }


def main(text: str, missing: str = "", confidence: int = 5) -> dict[str, Any]:
    return {
        "answer": {"text": text, "confidence": confidence},
        "explanation": f"because {text}",
        "missing_information": missing,
    }


def ctx_of(kb: KB, script: Callable[[Messages], str], **update: Any) -> QueryContext:
    """The loop's tests run on the graph retriever (their passages were chosen with it); ``update`` overrides."""
    store, settings, embedder = kb
    update = {"migres_retriever": "graph", **update}
    return QueryContext(store, settings.updated(update), embedder, ScriptedLLM(script))


# --- independent checks -------------------------------------------------------------------------------------
def assert_kept(rnd: MigresRound, store: GraphStore, embedder: Embedder, theta: float) -> None:
    """Every kept chunk: its cosine to its query recomputed from the chunk text (as ingestion embeds it) and
    >= θ; every kept sentence is in the chunk, >= θ, recomputed; ``whole`` iff the chunk beats its sentences."""
    rows = {r["id"]: r for r in store.run("retrieve/chunk_details", {"ids": [p.chunk_id for p in rnd.passages]})}
    assert set(rows) == {p.chunk_id for p in rnd.passages}
    for p in rnd.passages:
        assert p.query in rnd.queries
        row = rows[p.chunk_id]
        qv = embedder.embed([p.query])[0]
        want = float(embedder.embed([index_text(row["document_title"], "", "text", row["text"], None)])[0] @ qv)
        assert p.score == pytest.approx(want, abs=1e-3) and p.score >= theta
        assert p.document_title == row["document_title"]
        for s in p.sentences:
            assert s.text in row["text"] and s.score >= theta
            assert s.score == pytest.approx(float(embedder.embed([s.text])[0] @ qv), abs=1e-3)
        every = embedder.embed(sentences(row["text"])) @ qv  # all its sentences, kept or not (or shown before)
        assert p.whole == (p.score > float(every.max()))


def shown(rnd: MigresRound) -> set[tuple[str, str]]:
    """What an iteration showed the Leaf Module: (chunk id, '') for a whole chunk, else (chunk id, sentence)."""
    return {(p.chunk_id, s) for p in rnd.passages for s in ([""] if p.whole else [x.text for x in p.sentences])}


def assert_citations_in_graph(answer: Answer, store: GraphStore) -> None:
    ids = [c.chunk_id for c in answer.citations]
    rows = {r["id"]: r for r in store.run("retrieve/chunk_details", {"ids": ids})} if ids else {}
    assert set(rows) == set(ids) and len(ids) == len(set(ids))
    for c in answer.citations:
        assert c.document_title == rows[c.chunk_id]["document_title"]
        assert c.quote and c.quote.replace("...", "")[:40] in " ".join(rows[c.chunk_id]["text"].split())


# --- the loop's branches ------------------------------------------------------------------------------------
def test_answerable_at_once(kb: KB, corpus: dict[str, Any]) -> None:
    store, settings, embedder = kb
    question = corpus["question"]
    script = Script(leaf=[cite("Journal of Psychotherapy Integration", FACT1)], main=[main("G. Stanley Hall")])
    answer = answer_migres(question, ctx_of(kb, script))

    assert answer.method == "migres" and answer.answer == "G. Stanley Hall"
    assert answer.rationale == "because G. Stanley Hall"
    assert script.kinds == ["leaf", "main"] and answer.usage.calls == 2 and answer.usage.prompt_tokens > 0
    (rnd,) = trace_of(answer, MigresRound)
    assert rnd.type == "migres" and rnd.queries == [question] and not rnd.generated and rnd.sub_questions() == []
    assert rnd.retriever == "graph" and rnd.retrieved > len(rnd.passages) > 0 and not rnd.knowledge_prompting
    assert_kept(rnd, store, embedder, THETA)
    assert len(rnd.passages) <= settings.migres.migres_passages
    assert [p.score for p in rnd.passages] == sorted((p.score for p in rnd.passages), reverse=True)
    jpi = rnd.passages[0]
    assert jpi.document_title == "Journal of Psychotherapy Integration"
    # the Leaf prompt shows each kept chunk as its kept sentences (or the whole chunk), in that order
    leaf = script.prompt("leaf")
    assert passages_of(leaf) == [p.document_title for p in rnd.passages]
    assert all(s.text in leaf for p in rnd.passages for s in p.sentences)
    assert rnd.extractions == [MigresRound.MigresExtraction(info=FACT1, chunk_ids=[jpi.chunk_id])]
    assert rnd.answerable and rnd.answer == "G. Stanley Hall" and rnd.confidence == 5
    assert [c.chunk_id for c in answer.citations] == [jpi.chunk_id] == [c.id for c in answer.chunks]
    assert_citations_in_graph(answer, store)
    assert f"Information: {FACT1}\nQuestion: {question}" in script.prompt("main")


def test_missing_information_then_answerable(kb: KB, corpus: dict[str, Any]) -> None:
    store, settings, embedder = kb
    question = corpus["question"]
    script = Script(
        leaf=[cite("Journal of Psychotherapy Integration", FACT1), cite("Adolescence", FACT2)],
        main=[main("unanswerable", MISSING, 1), main("G. Stanley Hall")],
        query=[{"queries": [HOP2, question, "1. " + HOP2.lower()]}],  # a repeat of the history, a duplicate
    )
    answer = answer_migres(question, ctx_of(kb, script, migres_passages=1))  # round 1 shows the top chunk only

    assert script.kinds == ["leaf", "main", "query", "leaf", "main"] and answer.usage.calls == 5
    r1, r2 = trace_of(answer, MigresRound)
    assert not r1.answerable and r1.answer == "unanswerable" and r1.explanation == "because unanswerable"
    assert r2.missing_information == MISSING and r2.generated and r2.queries == [HOP2] == r2.sub_questions()
    # the Query Generator saw the question, the history, the known information and the missing information
    qp = script.prompt("query")
    assert f"Original Question: {question}\nHistorical Questions: {question}\nKnown Information: {FACT1}" in qp
    assert f"Missing Information: {MISSING}" in qp
    # round 2 retrieves for the new query; nothing round 1 showed is shown again (the Memory Module)
    assert_kept(r2, store, embedder, THETA)
    assert not shown(r1) & shown(r2)
    hall = next(p for p in r2.passages if p.document_title == "Adolescence")
    assert not hall.whole and 0 < len(hall.sentences) < 8  # sentence-level filtering: 8 sentences, few kept
    assert any("first president of the American Psychological Association" in s.text for s in hall.sentences)
    leaf2 = script.prompt("leaf", 1)
    assert "Question: " + HOP2 in leaf2
    text = next(p["text"] for p in corpus["passages"] if p["title"] == "Adolescence")
    dropped = [u for u in sentences(text) if u not in {s.text for s in hall.sentences}]
    assert dropped and not any(u in leaf2 for u in dropped)  # a dropped sentence is not shown
    assert r2.extractions[0].chunk_ids == [hall.chunk_id]
    assert f"Information: {FACT1} {FACT2}\n" in script.prompt("main", 1)
    assert answer.answer == "G. Stanley Hall"
    assert [c.chunk_id for c in answer.citations] == [r1.extractions[0].chunk_ids[0], hall.chunk_id]
    assert "first president" in answer.citations[1].quote
    assert_citations_in_graph(answer, store)


def test_unsupported_statements_are_dropped(kb: KB, corpus: dict[str, Any]) -> None:
    leaf = {
        "useful_information": [
            {"info": "Invented.", "support_passages": [99]},
            {"info": FACT1, "support_passages": ["Passage 0"]},
        ]
    }
    script = Script(leaf=[leaf], main=[main("G. Stanley Hall")])
    answer = answer_migres(corpus["question"], ctx_of(kb, script))
    (rnd,) = trace_of(answer, MigresRound)
    assert rnd.dropped == ["Invented."] and [e.info for e in rnd.extractions] == [FACT1]
    assert [c.chunk_id for c in answer.citations] == [rnd.passages[0].chunk_id]


def test_filter_rejects_everything_then_knowledge_prompting(kb: KB, corpus: dict[str, Any]) -> None:
    store, _, _ = kb
    question = corpus["question"]
    knowledge = "The American Psychological Association publishes the journal; G. Stanley Hall was its first president."
    script = Script(
        knowledge=[knowledge],
        leaf=[{"useful_information": [{"info": FACT2, "support_passages": [0]}]}],
        main=[main("G. Stanley Hall")],
    )
    answer = answer_migres(question, ctx_of(kb, script, migres_threshold=0.99))
    (rnd,) = trace_of(answer, MigresRound)
    assert script.kinds == ["knowledge", "leaf", "main"] and answer.usage.calls == 3
    assert rnd.retrieved > 0 and rnd.passages == [] and rnd.knowledge_prompting and rnd.knowledge == [knowledge]
    assert passages_of(script.prompt("leaf")) == [knowledge]  # shown as a passage without a title
    assert script.prompt("knowledge").endswith(f"Question: {question}\nInformation:")
    assert rnd.extractions == [MigresRound.MigresExtraction(info=FACT2, chunk_ids=[], knowledge=True)]
    assert answer.answer == "G. Stanley Hall" and answer.citations == [] and answer.chunks == []  # never a citation
    assert any("knowledge prompting" in line for line in rnd.summary_lines())
    # knowledge prompting off (the paper's "w/o GPT knowledge" ablation): no such call, the trace says why
    script = Script(main=[main("unanswerable", MISSING)], query=[{"queries": []}])
    answer = answer_migres(question, ctx_of(kb, script, migres_threshold=0.99, migres_knowledge_prompting=False))
    assert script.kinds == ["main", "query", "solve"] and "θ = 0.99" in trace_of(answer, MigresRound)[0].note
    assert "no new query" in trace_of(answer, MigresRound)[1].note and answer.answer == "scripted"


def test_iteration_cap_then_solve_streamed(kb: KB, corpus: dict[str, Any]) -> None:
    store, _, _ = kb
    question = corpus["question"]
    queries = iter([["Who founded the journal?"], ["Who edits the journal?"], ["never asked"]])
    script = Script(
        leaf=[cite("Journal of Psychotherapy Integration", FACT1), {"useful_information": []}],
        main=[main("unanswerable", MISSING, 1)],
        query=[lambda _p: {"queries": next(queries)}],
        solve=[{"answer": "G. Stanley Hall", "rationale": "from the known information"}],
    )
    events: list[AskEvent] = []
    ctx = ctx_of(kb, script, migres_iterations=3).with_events(events.append)
    answer = answer_migres(question, ctx)
    assert [r.round for r in trace_of(answer, MigresRound)] == [1, 2, 3] and not any(
        r.answerable for r in trace_of(answer, MigresRound)
    )
    assert script.kinds == ["leaf", "main", "query", "leaf", "main", "query", "leaf", "main", "solve"]
    assert answer.usage.calls == 9
    assert [r.queries for r in trace_of(answer, MigresRound)[1:]] == [
        ["Who founded the journal?"],
        ["Who edits the journal?"],
    ]
    rounds_shown = [shown(r) for r in trace_of(answer, MigresRound)]
    assert sum(map(len, rounds_shown)) == len(set().union(*rounds_shown))  # the Memory Module: nothing twice
    assert answer.answer == "G. Stanley Hall" and "answered from the known information" in answer.rationale
    assert f"# Context, if any\n{FACT1}\n# Question" in script.prompt("solve")
    # streamed: each iteration as it ends, then the solve step's answer text
    rounds = [e.round for e in events if e.type == "round"]
    assert [r.round for r in rounds] == [1, 2, 3] and rounds[-1] is trace_of(answer, MigresRound)[-1]  # type: ignore[union-attr]
    assert "".join(e.text for e in events if e.type == "delta") == "G. Stanley Hall"
    assert_citations_in_graph(answer, store)


def test_bm25_retriever(kb: KB, corpus: dict[str, Any]) -> None:
    from kbgraph.query.bm25 import BM25Index

    store, settings, embedder = kb
    script = Script(leaf=[cite("Journal of Psychotherapy Integration", FACT1)], main=[main("G. Stanley Hall")])
    answer = answer_migres(corpus["question"], ctx_of(kb, script, migres_retriever="bm25", migres_retrieve_k=5))
    (rnd,) = trace_of(answer, MigresRound)
    paper = {"k1": settings.migres.migres_bm25_k1, "b": settings.migres.migres_bm25_b}
    hits = [
        cid for cid, _ in BM25Index.open(store, settings, k1=paper["k1"], b=paper["b"]).search(corpus["question"], 5)
    ]
    assert rnd.retriever == "bm25" and rnd.retrieved == len(hits) and {p.chunk_id for p in rnd.passages} <= set(hits)
    assert_kept(rnd, store, embedder, THETA)
    assert_citations_in_graph(answer, store)


def test_bm25_retriever_has_the_papers_k1_and_b(kb: KB) -> None:
    """MIGRES' default retriever is BM25 at the paper's k1 0.9, b 0.4 (002 §4.1): its scores equal bm25s' at
    those parameters over the same chunk texts, computed here, and differ from bm25s' defaults 1.5 / 0.75 (red
    if the retriever or the index ignored the MIGRES settings)."""
    import bm25s

    from kbgraph.query.bm25 import _stemmer, row_text
    from kbgraph.query.methods.migres_retrieve import Retriever

    store, settings, embedder = kb
    ctx = QueryContext(store, settings, embedder, ScriptedLLM([]))
    assert settings.migres.migres_retriever == "bm25"  # the default
    query = "Who founded the publisher of the Journal of Psychotherapy Integration?"
    got = {c.id: c.score for c in Retriever(ctx).chunks(query, 8)}
    rows = store.run("retrieve/chunk_texts", {"after": "", "limit": 1000})
    stem, _ = _stemmer()
    tokens = bm25s.tokenize(
        [row_text(r) for r in rows], stopwords="en", stemmer=stem, return_ids=False, show_progress=False
    )
    q = bm25s.tokenize([query], stopwords="en", stemmer=stem, return_ids=False, show_progress=False)

    def scores(k1: float, b: float) -> dict[str, float]:
        index = bm25s.BM25(k1=k1, b=b, method="lucene")
        index.index(tokens, show_progress=False)
        docs, vals = index.retrieve(q, k=8, show_progress=False)
        return {rows[int(d)]["id"]: float(v) for d, v in zip(docs[0], vals[0], strict=True) if v > 0}

    paper, defaults = scores(0.9, 0.4), scores(1.5, 0.75)
    assert len(got) == 8 and got.keys() == paper.keys()
    assert all(got[c] == pytest.approx(paper[c], rel=1e-5) for c in got)
    assert any(got[c] != pytest.approx(defaults.get(c, 0.0), rel=1e-3) for c in got)


def test_parsers_take_near_misses() -> None:
    assert migres.MainOutput.model_validate({"answer": "Unanswerable."}).answerable is False
    out = migres.MainOutput.model_validate(
        {"answer": {"text": "Paris", "confidence": "4"}, "missing_information": None}
    )
    assert out.answerable and out.answer.confidence == 4 and out.missing_information == ""
    assert migres.NewQueries.model_validate({"queries": "1. A?\n2) B?\n"}).queries == ["A?", "B?"]
    s = migres.LeafOutput.model_validate({"useful_information": {"info": "x", "support_passages": ["Passage 2", 1.0]}})
    assert s.useful_information[0].support_passages == [2, 1]


def test_ask_and_render(kb: KB, corpus: dict[str, Any]) -> None:
    """Through the registry (``kbgraph ask --method migres``) and the --trace rendering."""
    import io

    from rich.console import Console

    from kbgraph.query.ask import answer_question
    from kbgraph.cli.render import render_answer

    script = Script(leaf=[cite("Journal of Psychotherapy Integration", FACT1)], main=[main("G. Stanley Hall")])
    answer = answer_question(corpus["question"], ctx_of(kb, script), method="migres")
    assert answer.method == "migres" and answer.answer == "G. Stanley Hall"
    buf = io.StringIO()
    render_answer(Console(file=buf, width=200), answer, trace=True)
    text = buf.getvalue()
    assert f"extracted: {FACT1}" in text and "answerable: G. Stanley Hall (confidence 5)" in text
    again = Answer.model_validate_json(answer.model_dump_json())  # the trace survives JSON (--json, the API)
    assert (
        isinstance(trace_of(again, MigresRound)[0], MigresRound)
        and trace_of(again, MigresRound)[0].passages == trace_of(answer, MigresRound)[0].passages
    )


# --- Neo4j --------------------------------------------------------------------------------------------------
@pytest.mark.neo4j
@pytest.mark.slow  # starting the local Neo4j server takes ~40 s here: `-m "not slow"` keeps this file fast
@pytest.mark.parametrize("backend_settings", ["neo4j"], indirect=True)
def test_migres_on_neo4j(
    store: GraphStore, backend_settings: Settings, graphs: tuple[list[DocumentGraph], Embedder], corpus: dict[str, Any]
) -> None:
    """The same two iterations on Neo4j 5: the kept chunks' cosines (Neo4j's similarity converted back to a
    cosine) match the recomputation, and the citations resolve."""
    write_documents(store, graphs[0])
    settings, embedder = backend_settings.updated({"migres_threshold": THETA}), graphs[1]
    script = Script(
        leaf=[cite("Journal of Psychotherapy Integration", FACT1), cite("Adolescence", FACT2)],
        main=[main("unanswerable", MISSING, 1), main("G. Stanley Hall")],
        query=[{"queries": [HOP2]}],
    )
    answer = answer_migres(corpus["question"], QueryContext(store, settings, embedder, ScriptedLLM(script)))
    r1, r2 = trace_of(answer, MigresRound)
    assert_kept(r1, store, embedder, THETA)
    assert_kept(r2, store, embedder, THETA)
    assert [c.document_title for c in answer.citations] == ["Journal of Psychotherapy Integration", "Adolescence"]
    assert_citations_in_graph(answer, store)


# --- the real local LLM -------------------------------------------------------------------------------------
def test_migres_with_the_real_llm(kb: KB, corpus: dict[str, Any], llm_server: LLMServerInfo, tmp_path: Path) -> None:
    """SmolLM2-135M through llama.cpp's server: the loop runs, every iteration is recorded, usage is the
    server's, and whatever is cited is a chunk of the graph (a 135M model's answer is not checked)."""
    from pydantic import SecretStr

    from kbgraph.llm import get_llm

    store, settings, embedder = kb
    s = settings.updated(
        {
            "llm_base_url": llm_server.base_url,
            "llm_model": llm_server.model,
            "llm_api_key": SecretStr("none"),
            "llm_cache_dir": tmp_path,
            "llm_timeout": 300.0,
            "llm_max_tokens": 120,
            "migres_iterations": 2,
            "migres_passages": 2,
        }
    )
    answer = answer_migres(corpus["question"], QueryContext(store, s, embedder, get_llm(s)))
    assert answer.method == "migres" and isinstance(answer.answer, str)
    assert 1 <= len(trace_of(answer, MigresRound)) <= 2 and trace_of(answer, MigresRound)[0].queries == [
        corpus["question"]
    ]
    assert answer.usage.calls >= 2 and answer.usage.prompt_tokens > 0 and answer.usage.completion_tokens > 0
    assert trace_of(answer, MigresRound)[0].passages or trace_of(answer, MigresRound)[0].knowledge_prompting
    assert_citations_in_graph(answer, store)
