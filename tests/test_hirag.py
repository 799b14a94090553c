"""HiRAG (paper 004 §4, Algorithm 1 of A.2; kbgraph.query.methods.hirag) on a real embedded FalkorDB graph of MuSiQue
passages grouped by title into documents (one chunk per sentence, real embeddings; entities and their MENTIONS
by hand), driven by a scripted LLM that reads the prompts: answerable at once; rethink at the chunk level, then
the document level; give-up after th3 and the fallback retrieval; "That's enough" at once; a repeated
sub-question; a tie of titles and the rewrite (from the question, then from an earlier answer). The
document-restricted chunk ranking is checked against an independent recomputation (each chunk's text embedded
again), every citation against the graph. One case on Neo4j, one run against the real local LLM server.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbgraph.embed.base import Embedder
from kbgraph.ingest.write import write_documents
from kbgraph.llm.base import Messages
from kbgraph.llm.fake import ScriptedLLM
from kbgraph.models import DocumentGraph
from kbgraph.query.methods import hirag
from kbgraph.query.context import QueryContext
from kbgraph.query.methods.hirag import answer_hirag
from kbgraph.query.methods.hirag_retrieve import EXACT, document_candidates, document_chunks, name_match, tied
from kbgraph.query.models import Answer, AskEvent, HiragRound
from kbgraph.query.prompts import hirag as hp
from kbgraph.query.methods.retrieval import retrieve_propagation
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore
from kbgraph.text import index_text
from tests.graph_kb import loaded_store
from tests.llm_server_fixture import LLMServerInfo
from tests.traces import trace_of

Q_ID = "2hop__150763_14904"  # Journal of Psychotherapy Integration -> American Psychological Association -> Hall
HOP1 = "What company published Journal of Psychotherapy Integration?"
HOP2 = "Who was the first president of the American Psychological Association?"
JPI, APA = "Journal of Psychotherapy Integration", "American Psychological Association"
EXTRA = (
    "musique_train100:1419",
    "musique_train100:356",
    "musique_train100:371",
    "musique_train100:1267",
    "musique_train100:1271",
)  # Adolescence (2nd passage), Madonna (book/entertainer), Iron Maiden (+ album)
ENTITIES = (APA, "G. Stanley Hall", JPI, "Madonna", "Iron Maiden", "Erik Erikson")
ENOUGH = "That's enough."
SENTENCE_END = re.compile(r"(?<=[a-z0-9)\"][.!?])\s+(?=[A-Z0-9\"])")  # not after an initial ("G. Stanley Hall")


# --- the graph ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def corpus(examples_dir: Path) -> dict[str, Any]:
    base = examples_dir / "multihop" / "musique"
    questions = {q["id"]: q for q in map(json.loads, (base / "hipporag_train100.questions.jsonl").open())}
    passages = [json.loads(line) for line in (base / "hipporag_train100.corpus.jsonl").open()]
    wanted = [*questions[Q_ID]["gold_passage_ids"], *EXTRA]
    chosen = [p for p in passages if p["id"] in wanted] + [p for p in passages if p["id"] not in wanted][:12]
    return {"passages": chosen, "question": questions[Q_ID]["question"]}


@pytest.fixture(scope="module")
def graphs(corpus: dict[str, Any], falkor_settings: Settings) -> tuple[list[DocumentGraph], Embedder]:
    """One Document per title (the paper's one entry per entity), one Chunk per sentence of its passages, chunks
    embedded from their index text as ingestion does; an Entity per name of ENTITIES mentioned by every chunk
    whose text contains it."""
    from kbgraph.embed import get_embedder
    from kbgraph.models import ChunkRecord, DocumentRecord, EntityRecord, MentionRecord, stable_id

    embedder = get_embedder(falkor_settings)
    by_title: dict[str, list[str]] = {}
    for p in corpus["passages"]:
        by_title.setdefault(p["title"], []).append(p["text"])
    entities = {name: EntityRecord(id=stable_id("ent", name), name=name, type="ORG") for name in ENTITIES}
    for rec, vec in zip(entities.values(), embedder.embed(list(entities)), strict=True):
        rec.embedding = vec.tolist()
    out: list[DocumentGraph] = []
    for title, texts in by_title.items():
        doc_id = stable_id("doc", title)
        doc = DocumentRecord(
            id=doc_id,
            uri=f"musique:{title}",
            title=title,
            mime="application/x-passages+jsonl",
            sha256=stable_id("sha", *texts),
        )
        sents = [s for t in texts for s in SENTENCE_END.split(t) if len(s.split()) >= 3]
        chunks = [
            ChunkRecord(
                id=stable_id("chunk", doc_id, str(i)),
                document_id=doc_id,
                parent_id=doc_id,
                text=s,
                order=i,
                section_path="",
            )
            for i, s in enumerate(sents)
        ]
        vecs = embedder.embed([index_text(title, "", "text", c.text, None) for c in chunks])
        for c, vec in zip(chunks, vecs, strict=True):
            c.embedding = vec.tolist()
        mentions = [
            MentionRecord(chunk_id=c.id, entity_id=entities[n].id) for c in chunks for n in ENTITIES if n in c.text
        ]
        used = list(dict.fromkeys(m.entity_id for m in mentions))
        out.append(
            DocumentGraph(
                document=doc, chunks=chunks, mentions=mentions, entities=[e for e in entities.values() if e.id in used]
            )
        )
    return out, embedder


#: (store, settings, embedder)
KB = tuple[GraphStore, Settings, Embedder]


@pytest.fixture(scope="module")
def kb(falkor_settings: Settings, graphs: tuple[list[DocumentGraph], Embedder]) -> Iterator[KB]:
    """(store, settings, embedder) on a FalkorDB graph of its own."""
    settings = falkor_settings.updated({"name": f"hir{uuid.uuid4().hex[:8]}"})
    with loaded_store(settings, graphs[0]) as store:
        yield store, settings, graphs[1]


# --- a scripted LLM that reads the prompts -----------------------------------------------------------------
def _kind(messages: Messages) -> str:
    system, user = messages[0]["content"], messages[-1]["content"]
    if "Question Decomposition Specialist" in system:
        return "decompose"
    for marker, kind in (
        ("extract the subject from the question", "entity"),
        ('##output:{"rationale"', "summarize"),
        ("finally give the answer.Let's think step by step!", "sub_answer"),
        ("Your answer must be yes or no", "verify"),
        ("describe an entity in a information", "describe"),
        ("the subquestion names an entity that several documents", "rewrite"),
    ):
        if marker in user:
            return kind
    raise AssertionError(f"unexpected prompt: {user[:200]}")


def known_of(prompt: str) -> str:
    """The chunk a sub-answer prompt shows (after its last "##konwn information:")."""
    return prompt.rsplit("##konwn information:", 1)[1].rsplit("\n##output:", 1)[0]


def from_chunk(prompt: str) -> str:
    """A sub-answer in the authors' format whose answer is the shown chunk's text."""
    text = known_of(prompt).split("Content: ", 1)[-1]
    return f"1. Analyzing the Question:\n- it asks a fact\n\n3. Answer the Question:\n- {text}"


#: a scripted answer: text, a JSON object, or a function of the last message's text giving either
Reply = str | dict[str, Any] | Callable[[str], str | dict[str, Any]]


class Script:
    """Responder for ScriptedLLM. Per kind, a list of answers used in turn (the last one repeats); an answer may
    be a function of the last message's text. Records (kind, messages) of every call."""

    def __init__(self, **answers: Iterable[Reply]) -> None:
        self.answers: dict[str, list[Reply]] = {k: list(v) for k, v in answers.items()}
        self.calls: list[tuple[str, Messages]] = []
        self._n: dict[str, int] = {}

    def __call__(self, messages: Messages) -> str:
        kind = _kind(messages)
        self.calls.append((kind, messages))
        i = self._n.get(kind, 0)
        self._n[kind] = i + 1
        defaults: dict[str, list[Reply]] = {
            "sub_answer": [from_chunk],
            "verify": ["yes"],
            "summarize": [{"answer": "G. Stanley Hall", "rationale": "summed"}],
        }
        options = self.answers.get(kind) or defaults.get(kind)
        assert options, f"no scripted answer for {kind}"
        item = options[min(i, len(options) - 1)]
        item = item(messages[-1]["content"]) if callable(item) else item
        return item if isinstance(item, str) else json.dumps(item)

    def kinds(self) -> list[str]:
        return [k for k, _ in self.calls]

    def prompts(self, kind: str) -> list[Messages]:
        return [m for k, m in self.calls if k == kind]


def entity_for(mapping: dict[str, str]) -> Callable[[str], str]:
    """An entity answer: the entity of the sub-question the prompt ends with."""
    return lambda prompt: next(e for q, e in mapping.items() if prompt.rstrip().endswith(q + "\n##output:"))


def ctx_of(
    kb: KB, script: Callable[[Messages], str], events: Callable[[AskEvent], None] | None = None, **update: Any
) -> QueryContext:
    store, settings, embedder = kb
    return QueryContext(store, settings.updated(update), embedder, ScriptedLLM(script), events)


# --- independent checks -------------------------------------------------------------------------------------
def expected_chunks(graphs: tuple[list[DocumentGraph], Embedder], title: str, query: str) -> list[tuple[str, float]]:
    """The document's chunks ranked by the cosine of their index text, embedded again, to ``query``."""
    doc_graphs, embedder = graphs
    g = next(g for g in doc_graphs if g.document.title == title)
    vecs = embedder.embed([index_text(title, "", "text", c.text, None) for c in g.chunks])
    sims = vecs @ embedder.embed([query])[0]
    order = sorted(range(len(g.chunks)), key=lambda i: (-float(sims[i]), i))
    return [(g.chunks[i].id, float(sims[i])) for i in order]


def assert_citations_in_graph(answer: Answer, store: GraphStore) -> None:
    ids = [c.chunk_id for c in answer.citations]
    rows = {r["id"]: r for r in store.run("retrieve/chunk_details", {"ids": ids})} if ids else {}
    assert set(rows) == set(ids) and len(ids) == len(set(ids))
    assert ids == [c.id for c in answer.chunks]
    for c in answer.citations:
        assert c.document_title == rows[c.chunk_id]["document_title"]
        assert c.quote and c.quote.replace("...", "")[:40] in " ".join(rows[c.chunk_id]["text"].split())


def assert_attempts(rnd: HiragRound, graphs: tuple[list[DocumentGraph], Embedder], plan: list[tuple[str, int]]) -> None:
    """``plan``: per try, (document title, rank of the chunk in the recomputed ranking of that document)."""
    assert len(rnd.attempts) >= len(plan)
    for a, (title, rank) in zip(rnd.attempts, plan, strict=False):
        want_id, want_score = expected_chunks(graphs, title, rnd.sub_question)[rank]
        assert (a.document_title, a.chunk_id) == (title, want_id)
        assert a.score == pytest.approx(want_score, abs=1e-3)


# --- the retriever ------------------------------------------------------------------------------------------
def test_document_and_chunk_levels(kb: KB, graphs: tuple[list[DocumentGraph], Embedder]) -> None:
    store, settings, embedder = kb
    assert name_match("Franco Rossi", "franco  rossi (director)") == EXACT and name_match("Jaws", "JAWS") == EXACT
    assert 0 < name_match("Journal of Psychotherapy", JPI) < 1 and name_match("", JPI) == 0
    docs = document_candidates(store, JPI, min_match=0.8)
    assert [(d.title, d.via, d.exact_title) for d in docs] == [(JPI, "title", True)]
    docs = document_candidates(store, APA, min_match=0.8)  # no title names it: the documents mentioning it
    assert {d.title for d in docs} == {"Adolescence", JPI} and {d.via for d in docs} == {"entity"}
    assert all(d.match == EXACT and not d.exact_title for d in docs) and not tied(docs, 1)
    madonna = document_candidates(store, "Madonna", min_match=0.8)
    assert [d.title for d in tied(madonna, 1)] == ["Madonna (book)", "Madonna (entertainer)"]
    assert tied(madonna, 2) == [] and document_candidates(store, "Zzyzx Quux", min_match=0.8) == []
    for title, query in (("Adolescence", HOP2), (JPI, HOP1), ("Madonna (book)", "Who wrote Madonna?")):
        doc_id = next(g.document.id for g in graphs[0] if g.document.title == title)
        got = document_chunks(store, doc_id, embedder.embed([query])[0])
        want = expected_chunks(graphs, title, query)
        assert [c for c, _ in got] == [c for c, _ in want]
        assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-3)


# --- the loop -----------------------------------------------------------------------------------------------
def test_answerable_at_once_streamed(
    kb: KB, corpus: dict[str, Any], graphs: tuple[list[DocumentGraph], Embedder]
) -> None:
    store = kb[0]
    events: list[AskEvent] = []
    script = Script(decompose=[HOP1, HOP2, ENOUGH], entity=[entity_for({HOP1: JPI, HOP2: APA})])
    answer = answer_hirag(corpus["question"], ctx_of(kb, script, events.append))
    assert answer.method == "hirag" and answer.answer == "G. Stanley Hall" and answer.rationale == "summed"
    r1, r2, r3 = trace_of(answer, HiragRound)
    assert (r1.sub_question, r1.entity, r2.sub_question, r2.entity) == (HOP1, JPI, HOP2, APA)
    assert r3.stop == "enough" and r3.sub_questions() == [] and r1.sub_questions() == [HOP1]
    assert [d.title for d in r1.documents] == [JPI] and r1.documents[0].tried
    assert_attempts(r1, graphs, [(JPI, 0)])
    assert_attempts(r2, graphs, [("Adolescence", 0)])  # most mentions first, then by title
    for r in (r1, r2):
        assert [a.level for a in r.attempts] == ["first"] and r.attempts[0].verified and not r.rethink
        assert r.chunk_id == r.attempts[0].chunk_id and not r.fallback
    assert "G. Stanley Hall" in r2.answer
    assert script.kinds() == ["decompose", "entity", "sub_answer", "verify"] * 2 + ["decompose", "summarize"]
    turns = script.prompts("decompose")[2]  # the third Decomposer call sees both sub-questions and answers
    assert [m["role"] for m in turns] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert turns[2]["content"] == HOP1 and turns[3]["content"] == r1.answer
    assert corpus["question"] in turns[0]["content"]
    summarize = script.prompts("summarize")[0][-1]["content"]
    known = f"{r1.answer}, {r2.answer}"
    assert summarize.endswith(f"##question:{corpus['question']}\n##konwn information:{known}\n##output:")
    assert [c.document_title for c in answer.citations] == [JPI, "Adolescence"]
    assert_citations_in_graph(answer, store)
    assert answer.usage.calls == len(script.calls) and answer.usage.prompt_tokens > 0
    rounds = [e.round for e in events if e.type == "round"]
    assert [r.round for r in rounds] == [1, 2, 3] and events[-1].type in ("delta", "reset")  # type: ignore[union-attr]
    assert "".join(e.text for e in events if e.type == "delta") == "G. Stanley Hall"


def test_rethink_at_chunk_then_document_level(
    kb: KB, corpus: dict[str, Any], graphs: tuple[list[DocumentGraph], Embedder]
) -> None:
    """th2 = 3: three chunks of the first document, then the first chunk of the second one."""
    script = Script(decompose=[HOP2, ENOUGH], entity=[APA], verify=["no", "no", "no", "yes"])
    answer = answer_hirag(corpus["question"], ctx_of(kb, script))
    rnd = trace_of(answer, HiragRound)[0]
    assert [a.level for a in rnd.attempts] == ["first", "chunk", "chunk", "document"] and rnd.rethink == "document"
    assert [a.verified for a in rnd.attempts] == [False, False, False, True]
    assert [a.t for a in rnd.attempts] == [1, 2, 3, 4]
    assert_attempts(rnd, graphs, [("Adolescence", 0), ("Adolescence", 1), ("Adolescence", 2), (JPI, 0)])
    assert [d.tried for d in rnd.documents] == [True, True] and not rnd.fallback
    assert rnd.chunk_id == rnd.attempts[-1].chunk_id and [c.chunk_id for c in answer.citations] == [rnd.chunk_id]
    assert_citations_in_graph(answer, kb[0])
    lines = rnd.summary_lines()
    assert lines[0] == f"round 1: sub-question “{HOP2}”" and "rethink: up to the document level" in lines
    assert sum(line.startswith("try ") for line in lines) == 4


def test_chunk_level_only_with_a_larger_th2(
    kb: KB, corpus: dict[str, Any], graphs: tuple[list[DocumentGraph], Embedder]
) -> None:
    script = Script(decompose=[HOP2, ENOUGH], entity=[APA], verify=["no", "yes"])
    rnd = trace_of(answer_hirag(corpus["question"], ctx_of(kb, script, hirag_th2=5)), HiragRound)[0]
    assert [a.level for a in rnd.attempts] == ["first", "chunk"] and rnd.rethink == "chunk"
    assert_attempts(rnd, graphs, [("Adolescence", 0), ("Adolescence", 1)])


def test_give_up_after_th3_then_fallback(kb: KB, corpus: dict[str, Any]) -> None:
    store = kb[0]
    script = Script(decompose=[HOP2, ENOUGH], entity=[APA], verify=["no", "no", "no", "no", "no", "yes"])
    ctx = ctx_of(kb, script)
    answer = answer_hirag(corpus["question"], ctx)
    rnd = trace_of(answer, HiragRound)[0]
    assert [a.level for a in rnd.attempts] == ["first", "chunk", "chunk", "document", "fallback", "fallback"]
    assert (rnd.fallback, rnd.fallback_query) == ("gave_up", HOP2) and [a.t for a in rnd.attempts][-2:] == [5, 6]
    tried = [a.chunk_id for a in rnd.attempts[:4]]
    ranking = [c.id for c in retrieve_propagation(HOP2, ctx, k=3 + 4) if c.id not in tried][:3]
    assert [a.chunk_id for a in rnd.attempts[4:]] == ranking[:2] and rnd.chunk_id == ranking[1]
    assert answer.citations[0].chunk_id == ranking[1]
    assert_citations_in_graph(answer, store)
    assert any(line.startswith("fallback (gave up)") for line in rnd.summary_lines())


def test_nothing_verified_then_repeated_sub_question(kb: KB, corpus: dict[str, Any]) -> None:
    """Nothing verified anywhere: the sub-answer is '' and the Decomposer hears so; it repeats the
    sub-question, which stops the loop. An entity no document matches goes straight to the fallback."""
    script = Script(decompose=[HOP2.upper(), HOP2 + "  "], entity=["Zzyzx Quux"], verify=["no"])
    answer = answer_hirag(corpus["question"], ctx_of(kb, script, hirag_th2=1))
    r1, r2 = trace_of(answer, HiragRound)
    assert (r1.fallback, r1.documents, r1.answer, r1.chunk_id) == ("no_document", [], "", None)
    assert [a.level for a in r1.attempts] == ["fallback"] and r1.note == "no chunk verified"
    assert r2.stop == "repeat" and r2.sub_question == HOP2 and r2.sub_questions() == []
    assert script.prompts("decompose")[1][-1]["content"] == hp.NO_ANSWER
    assert answer.citations == [] and answer.chunks == []
    assert script.prompts("summarize")[0][-1]["content"].endswith("##konwn information:\n##output:")


def test_enough_at_once(kb: KB, corpus: dict[str, Any]) -> None:
    script = Script(decompose=["That's enough. The question can be answered."])
    answer = answer_hirag(corpus["question"], ctx_of(kb, script))
    assert [r.stop for r in trace_of(answer, HiragRound)] == ["enough"] and script.kinds() == ["decompose", "summarize"]
    assert answer.answer == "G. Stanley Hall" and answer.citations == [] and answer.usage.calls == 2


def test_rounds_are_capped(kb: KB, corpus: dict[str, Any]) -> None:
    script = Script(decompose=[HOP1, HOP2, "Who founded it?"], entity=[entity_for({HOP1: JPI, HOP2: APA})])
    answer = answer_hirag(corpus["question"], ctx_of(kb, script, hirag_rounds=2))
    assert [r.sub_question for r in trace_of(answer, HiragRound)] == [HOP1, HOP2] and "2 rounds: stop" in trace_of(
        answer, HiragRound
    )[-1].note
    assert script.kinds().count("decompose") == 2


def test_tie_then_rewrite_from_the_question_then_from_an_answer(kb: KB, corpus: dict[str, Any]) -> None:
    q1, q2 = "Who wrote the biography Madonna?", "When was the biography Madonna released?"
    rewritten = "Who wrote the 2001 biography Madonna by Andrew Morton?"
    described = "Madonna is a biography by English author Andrew Morton."
    script = Script(decompose=[q1, q2, ENOUGH], entity=["Madonna"], rewrite=[rewritten], describe=[described])
    ctx = ctx_of(kb, script)
    answer = answer_hirag("Who wrote Madonna and when was it released?", ctx)
    r1, r2, _ = trace_of(answer, HiragRound)
    for r in (r1, r2):
        assert r.tie == ["Madonna (book)", "Madonna (entertainer)"] and r.fallback == "tie"
        assert [a.level for a in r.attempts] == ["fallback"] and r.attempts[0].verified
    assert (r1.rewrite, r1.rewrite_from, r1.fallback_query) == (rewritten, "question", rewritten)
    assert "Madonna" in r1.answer  # so round 2 describes the entity from it (eq. 4, a* = Select(A, e))
    assert (r2.rewrite, r2.rewrite_from) == (f"{q2} {described}", "answer")
    describe = script.prompts("describe")[0][-1]["content"]
    assert describe.endswith(f"##entity:Madonna\n##information:{r1.answer}\n##output:")
    assert r1.attempts[0].chunk_id == retrieve_propagation(rewritten, ctx, k=3)[0].id
    assert_citations_in_graph(answer, kb[0])
    assert any(line.startswith("rewrite (with the question)") for line in r1.summary_lines())


def test_parsers() -> None:
    assert hirag.definer("That's enough.") and hirag.definer("that’s enough") and hirag.definer("That is enough")
    assert not hirag.definer("Is there enough water in the Ohio River?")
    assert hirag.sub_question_of("\n2nd Simple Question: Who is X?\nmore") == "Who is X?"
    assert hirag.entity_of('##output: "Jaws".\nextra') == "Jaws"
    response = "1. Analyzing...\n3. Answer the Question:\n- The director is X.\n"
    assert hirag.sub_answer_of(response) == "The director is X."
    assert hirag.sub_answer_of("It is X.") == "It is X."


def test_ask_render_and_rationale(kb: KB, corpus: dict[str, Any]) -> None:
    """Through the registry (``kbgraph ask --method hirag``), the --trace rendering, JSON and the rationale rows."""
    import io

    from rich.console import Console

    from kbgraph.query.ask import answer_question
    from kbgraph.query.rationale import rationale_rows
    from kbgraph.cli.render import render_answer

    script = Script(decompose=[HOP1, ENOUGH], entity=[JPI])
    answer = answer_question(corpus["question"], ctx_of(kb, script), method="hirag")
    buf = io.StringIO()
    render_answer(Console(file=buf, width=200), answer, trace=True)
    text = buf.getvalue()
    assert f"round 1: sub-question “{HOP1}”" in text and f"entity “{JPI}”: {JPI} (2.00 title, tried)" in text
    assert "try 1 (first)" in text and "the Definer: answerable, stop" in text
    again = Answer.model_validate_json(answer.model_dump_json())  # the trace survives JSON (--json, the API)
    assert (
        isinstance(trace_of(again, HiragRound)[0], HiragRound)
        and trace_of(again, HiragRound)[0].attempts == trace_of(answer, HiragRound)[0].attempts
    )
    rows = rationale_rows(answer, "2025-01-01T00:00:00Z")
    assert [s["text"] for s in rows.sub_questions] == [HOP1]
    assert [u["chunk_id"] for u in rows.used] == [trace_of(answer, HiragRound)[0].chunk_id]


# --- Neo4j --------------------------------------------------------------------------------------------------
@pytest.mark.neo4j
@pytest.mark.slow  # starting the local Neo4j server takes ~40 s here: `-m "not slow"` keeps this file fast
@pytest.mark.parametrize("backend_settings", ["neo4j"], indirect=True)
def test_rethink_on_neo4j(
    store: GraphStore, backend_settings: Settings, graphs: tuple[list[DocumentGraph], Embedder], corpus: dict[str, Any]
) -> None:
    """Chunk- then document-level rethink on Neo4j 5: the same documents, the same recomputed chunk ranking
    (Neo4j's similarity mapped back to a cosine), citations that resolve."""
    write_documents(store, graphs[0])
    script = Script(decompose=[HOP2, ENOUGH], entity=[APA], verify=["no", "no", "no", "yes"])
    answer = answer_hirag(corpus["question"], QueryContext(store, backend_settings, graphs[1], ScriptedLLM(script)))
    rnd = trace_of(answer, HiragRound)[0]
    assert {d.title for d in rnd.documents} == {"Adolescence", JPI}
    assert [a.level for a in rnd.attempts] == ["first", "chunk", "chunk", "document"]
    assert_attempts(rnd, graphs, [("Adolescence", 0), ("Adolescence", 1), ("Adolescence", 2), (JPI, 0)])
    assert_citations_in_graph(answer, store)


# --- the real local LLM -------------------------------------------------------------------------------------
def test_hirag_with_the_real_llm(kb: KB, corpus: dict[str, Any], llm_server: LLMServerInfo, tmp_path: Path) -> None:
    """SmolLM2-135M through llama.cpp's server: the loop runs, its rounds are recorded, usage is the server's,
    and whatever is cited is a chunk of the graph (a 135M model's answer is not checked)."""
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
            "llm_max_tokens": 60,
            "hirag_rounds": 1,
            "hirag_th2": 1,
            "hirag_th3": 1,
        }
    )
    answer = answer_hirag(corpus["question"], QueryContext(store, s, embedder, get_llm(s)))
    assert answer.method == "hirag" and isinstance(answer.answer, str) and len(trace_of(answer, HiragRound)) == 1
    rnd = trace_of(answer, HiragRound)[0]
    assert rnd.decomposer_output and (rnd.stop or rnd.entity)
    assert answer.usage.calls >= 2 and answer.usage.prompt_tokens > 0 and answer.usage.completion_tokens > 0
    calls = 2 + (1 if rnd.entity else 0) + (1 if rnd.tie else 0) + 2 * len(rnd.attempts)
    assert calls <= answer.usage.calls <= calls + 1  # + the Summarizer's JSON repair request, if any
    assert_citations_in_graph(answer, store)
