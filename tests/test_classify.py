"""Question classification and level routing, method 'auto' (kbgraph.query.methods.classify; PIKE-RAG §3.2, §4.2) and the
L1 system, method 'l1' (kbgraph.query.methods.l1; §5.2), on a real embedded FalkorDB graph of 16 MuSiQue passages (the
gold passages of four 2-hop questions and others) with real embeddings, and a scripted LLM that reads the prompts.

Checked: the class is parsed as the schema's enum (every class and subtype name; names that merely contain a
class, which a substring parse sent to L1, are invalid: issue 28 defect 1); each class, and each of Figure 1's
eight examples, goes to its level (the prompts the LLM saw say which method ran), subtypes are kept, an
unusable classification goes to L2 as 'unknown', predictive/creative answers state their class and the missing
L3/L4 in the rationale; the L1 context is the score-propagation top l1_k; class and route reach the trace, the
stream's final answer, the saved (:Question) (both stores) and ``kbgraph eval`` (records, summary.json per class,
report.md). One run against the real local LLM server.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from kbgraph.embed.base import Embedder
from kbgraph.llm.base import Messages
from kbgraph.llm.fake import ScriptedLLM
from kbgraph.models import DocumentGraph
from kbgraph.query.ask import answer_question
from kbgraph.query.methods.classify import KINDS, SUBTYPES, answer_auto, classify_question, route
from kbgraph.query.context import QueryContext
from kbgraph.query.methods.registry import get_method
from kbgraph.query.prompts import SYSTEM_JUDGE
from kbgraph.query.prompts.classify import CLASSIFY
from kbgraph.cli.render import render_answer
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore
from tests.graph_kb import loaded_store
from kbgraph.query.models import TraceRound
from tests.llm_server_fixture import LLMServerInfo
from tests.traces import trace_of

Q_IDS = ("2hop__150763_14904", "2hop__6584_6587", "2hop__205146_62031", "2hop__215852_404718")
HOP1 = "What company published Journal of Psychotherapy Integration?"
N_OTHERS = 8


# --- the graph ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def data(examples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A data set of the four questions (<prefix>.questions.jsonl) and its 16 passages, verbatim from
    examples/multihop/musique."""
    base = examples_dir / "multihop" / "musique"
    questions = {q["id"]: q for q in map(json.loads, (base / "hipporag_train100.questions.jsonl").open())}
    chosen = [questions[qid] for qid in Q_IDS]
    passages = [json.loads(line) for line in (base / "hipporag_train100.corpus.jsonl").open()]
    gold = list(dict.fromkeys(pid for q in chosen for pid in q["gold_passage_ids"]))
    keep = gold + [p["id"] for p in passages if p["id"] not in gold][:N_OTHERS]
    by_id = {p["id"]: p for p in passages}
    folder = tmp_path_factory.mktemp("classify")
    (folder / "four.questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in chosen), encoding="utf-8")
    return {"prefix": folder / "four", "questions": chosen, "passages": [by_id[pid] for pid in keep]}


def _graphs(passages: list[dict[str, Any]], embedder: Embedder) -> list[DocumentGraph]:
    """Document + Chunk per passage (URI ``...#<passage id>``, as eval reads it) and one atomic question per
    sentence, embedded with the real embedder."""
    from kbgraph.models import AtomicQuestionRecord, ChunkRecord, DocumentRecord, stable_id
    from kbgraph.text import index_text

    out = []
    for p in passages:
        doc_id = stable_id("doc", p["id"])
        doc = DocumentRecord(
            id=doc_id,
            uri=f"file:///four.corpus.jsonl#{p['id']}",
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
        sentences = [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9])", p["text"]) if len(s.split()) >= 3]
        atoms = [
            AtomicQuestionRecord(id=stable_id("aq", chunk.id, s), chunk_id=chunk.id, text=s, kind="sentence")
            for s in dict.fromkeys(sentences)
        ]
        out.append(DocumentGraph(document=doc, chunks=[chunk], questions=atoms))
    texts = [index_text(g.document.title, "", "text", g.chunks[0].text, None) for g in out]
    for g, vec in zip(out, embedder.embed(texts), strict=True):
        g.chunks[0].embedding = vec.tolist()
    atoms = [a for g in out for a in g.questions]
    for a, vec in zip(atoms, embedder.embed([a.text for a in atoms]), strict=True):
        a.embedding = vec.tolist()
    return out


@pytest.fixture(scope="module")
def graphs(data: dict[str, Any], falkor_settings: Settings) -> tuple[list[DocumentGraph], Embedder]:
    from kbgraph.embed import get_embedder

    embedder = get_embedder(falkor_settings)
    return _graphs(data["passages"], embedder), embedder


#: (store, settings, embedder) over the 16-passage graph
KB = tuple[GraphStore, Settings, Embedder]


@pytest.fixture(scope="module")
def kb(falkor_settings: Settings, graphs: tuple[list[DocumentGraph], Embedder]) -> Iterator[KB]:
    """(store, settings, embedder) over the 16-passage graph, on a FalkorDB graph of its own."""
    settings = falkor_settings.updated({"name": f"cls{uuid.uuid4().hex[:8]}", "llm_model": None})
    with loaded_store(settings, graphs[0]) as store:
        yield store, settings, graphs[1]


# --- a scripted LLM that reads the prompts ------------------------------------------------------------------
def _prompt(messages: Messages) -> str:
    return next(m["content"] for m in messages if m["role"] == "user")


def _kind(messages: Messages) -> str:
    text = _prompt(messages)
    if messages[0]["content"] == SYSTEM_JUDGE:
        return "judge"
    if "# Classes" in text and "linkable_reasoning" in text:
        return "classify"
    if "raise atomic sub-questions" in text:
        return "propose"
    if "# Sub-Questions You Can Choose From" in text:
        return "select"
    if "# Paragraph List You Can Choose From" in text:
        return "select_chunk"
    if "Your task is to answer a question referring to a given context" in text:
        return "answer"
    raise AssertionError(f"unexpected prompt: {text[:200]}")


class Script:
    """Classification replies (one per classify request, repairs included), then Algorithm 1 with one
    proposal round (``HOP1``, candidate 1 selected) and the QA answer ``answer``. ``kinds``: the prompts
    seen, repairs marked '+repair'."""

    def __init__(self, *classify: str, answer: str = "G. Stanley Hall", judge: str = "Yes") -> None:
        self.classify, self.answer, self.judge = list(classify), answer, judge
        self.kinds: list[str] = []
        self.prompts: list[str] = []
        self._proposals = 0

    def __call__(self, messages: Messages) -> str:
        kind = _kind(messages)
        repair = sum(m["role"] == "user" for m in messages) > 1
        self.kinds.append(kind + ("+repair" if repair else ""))
        self.prompts.append(_prompt(messages))
        if kind == "classify":
            return self.classify.pop(0)
        if kind == "propose":
            self._proposals += 1
            subs = [HOP1] if self._proposals == 1 else []
            return json.dumps({"thinking": "scripted", "sub_questions": subs})
        if kind == "select":
            return json.dumps({"thinking": "scripted", "question_idx": 1})
        if kind == "select_chunk":
            return json.dumps({"thinking": "scripted", "paragraph_idx": None})
        if kind == "judge":
            return self.judge
        return json.dumps({"answer": self.answer, "rationale": "from the context"})


def cls(kind: str, subtype: str | None = None, rationale: str = "scripted reason") -> str:
    return json.dumps({"rationale": rationale, "kind": kind, "subtype": subtype})


def _ctx(kb: KB, script: Callable[[Messages], str], **update: Any) -> QueryContext:
    store, settings, embedder = kb
    return QueryContext(store, settings.updated(update), embedder, ScriptedLLM(script))


# --- routing ------------------------------------------------------------------------------------------------
def test_factual_goes_to_l1_propagation_top_k_and_one_qa_prompt(kb: KB, data: dict[str, Any]) -> None:
    question = data["questions"][0]["question"]
    script = Script(cls("factual", "bridging"))
    ctx = _ctx(kb, script, l1_k=4)
    answer = answer_auto(question, ctx)
    assert script.kinds == ["classify", "answer"]  # no proposer: Algorithm 1 did not run
    assert question in script.prompts[0] and "Figure" not in script.prompts[0]
    assert (answer.method, answer.question_class, answer.question_subtype, answer.route) == (
        "auto",
        "factual",
        None,
        "L1:l1",
    )  # a subtype of a factual question is dropped
    assert answer.answer == "G. Stanley Hall" and trace_of(answer, TraceRound) == []
    # the context is the propagation top l1_k, recomputed through the registry's retrieval method
    top = get_method("propagation", "retrieval").run(question, QueryContext(kb[0], kb[1], kb[2], None), k=4)
    assert [c.id for c in answer.chunks] == [c.id for c in top] and len(top) == 4
    assert [c.chunk_id for c in answer.citations] == [c.id for c in top]
    assert all(" ".join(c.text.split())[:60] in " ".join(script.prompts[1].split()) for c in top)
    assert answer.rationale.startswith("Question class: factual (PIKE-RAG §3.2); answered by the L1 system (l1).")
    assert "Classifier: scripted reason" in answer.rationale and answer.rationale.endswith("from the context")
    assert answer.usage.calls == 2 and answer.usage.prompt_tokens > 0


@pytest.mark.parametrize("subtype", ["bridging", "comparative", "quantitative", "summarizing"])
def test_linkable_reasoning_goes_to_l2_pike_with_its_subtype(kb: KB, data: dict[str, Any], subtype: str) -> None:
    script = Script(cls("Linkable-Reasoning", subtype.capitalize()))
    answer = answer_auto(data["questions"][0]["question"], _ctx(kb, script))
    assert script.kinds == ["classify", "propose", "select", "propose", "answer"]  # Algorithm 1
    assert (answer.method, answer.question_class, answer.question_subtype, answer.route) == (
        "auto",
        "linkable_reasoning",
        subtype,
        "L2:pike",
    )
    assert [r.type for r in trace_of(answer, TraceRound)] == ["pike", "pike"] and trace_of(answer, TraceRound)[
        0
    ].proposals == [HOP1]
    assert answer.citations[0].document_title == "Journal of Psychotherapy Integration"
    assert f"Question class: linkable_reasoning ({subtype})" in answer.rationale
    assert "L3" not in answer.rationale and answer.usage.calls == 5


@pytest.mark.parametrize(("kind", "level"), [("predictive", "L3"), ("creative", "L4")])
def test_predictive_and_creative_go_to_l2_and_say_so(kb: KB, data: dict[str, Any], kind: str, level: str) -> None:
    script = Script(cls(kind, "quantitative"))
    answer = answer_auto("How many biosimilar products will be approved in 2030?", _ctx(kb, script))
    assert script.kinds[0] == "classify" and script.kinds[1] == "propose" and script.kinds[-1] == "answer"
    assert (answer.question_class, answer.question_subtype, answer.route) == (kind, None, "L2:pike")
    first = answer.rationale.split("\n\n")[0]
    assert first.startswith(f"Question class: {kind} (PIKE-RAG §3.2); answered by the L2 system (pike).")
    assert f"needs an {level} system" in first and "sketches but does not specify" in first


def test_unusable_classification_is_unknown_and_goes_to_l2(kb: KB, data: dict[str, Any]) -> None:
    question = data["questions"][0]["question"]
    script = Script("I think it is a hard one", cls("astrological"))  # no JSON; then a class that does not exist
    answer = answer_auto(question, _ctx(kb, script))
    assert script.kinds[:3] == ["classify", "classify+repair", "propose"]
    assert (answer.question_class, answer.question_subtype, answer.route) == ("unknown", None, "L2:pike")
    assert "no valid classification JSON" in answer.rationale and "classification failed" in answer.rationale
    # a repair that works keeps the class
    script = Script('{"kind": }', cls("factual"))
    qc = classify_question(question, ScriptedLLM(script))
    assert script.kinds == ["classify", "classify+repair"] and qc.kind == "factual"


# --- the class is the schema's enum (§3.2), not a substring ------------------------------------------------------
@pytest.mark.parametrize(
    "spell",
    [str, str.upper, str.title, lambda k: k.replace("_", "-"), lambda k: f" {k.replace('_', ' ')} "],
    ids=["as is", "upper", "title", "-", " "],
)
@pytest.mark.parametrize("kind", KINDS)
def test_every_class_name_parses_to_its_class(kind: str, spell: Callable[[str], str]) -> None:
    """Each of the four classes, as the schema spells it or with another letter case or word separator, is that
    class at the first answer (no repair); the enum the parse accepts is the one the schema sent declares."""
    llm = ScriptedLLM([cls(spell(kind), "Comparative")], response_format="json_schema")
    qc = classify_question("Is Abrilada an interchangeable biosimilar product?", llm)
    assert (qc.kind, len(llm.calls)) == (kind, 1)
    assert qc.subtype == ("comparative" if kind == "linkable_reasoning" else None)
    schema = llm.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["kind"]["enum"] == list(KINDS)


@pytest.mark.parametrize("subtype", SUBTYPES)
def test_every_subtype_name_parses_to_its_subtype(subtype: str) -> None:
    qc = classify_question("q?", ScriptedLLM([cls("linkable_reasoning", subtype.upper())]))
    assert (qc.kind, qc.subtype) == ("linkable_reasoning", subtype)
    qc = classify_question("q?", ScriptedLLM([cls("linkable_reasoning", f"not {subtype}")]))
    assert (qc.kind, qc.subtype) == ("linkable_reasoning", None)  # a name containing a subtype is none


@pytest.mark.parametrize(
    "name",
    [
        "Linkable & Reasoning (multiple facts)",
        "non-factual",
        "predictive (not factual)",
        "not factual",
        "factual or creative",
        "Factual question",
        "facts",
        "creativity",
    ],
)
def test_a_name_containing_a_class_is_no_class(name: str) -> None:
    """Issue 28 defect 1: a substring parse made each of these 'factual' (or another class) and sent it to L1.
    Parsed as the enum, each is invalid: the repair request names the four classes, and a repeated invalid
    answer is 'unknown', which goes to L2."""
    llm = ScriptedLLM([cls(name), cls(name)])
    qc = classify_question("How many interchangeable biosimilar products have been approved by the FDA?", llm)
    assert (qc.kind, route(qc.kind)) == ("unknown", "L2") and len(llm.calls) == 2
    repair = llm.calls[1][-1]["content"]
    assert "kind" in repair and all(k in repair for k in KINDS)
    llm = ScriptedLLM([cls(name), cls("linkable_reasoning", "quantitative")])  # a repair that works keeps it
    assert classify_question("q?", llm).kind == "linkable_reasoning" and len(llm.calls) == 2


#: PIKE-RAG Figure 1: its eight example questions and their classes (Q1, Q2, Q3 of §3.2 marked).
FIGURE_1 = [
    ("Is Abrilada an interchangeable biosimilar product?", "factual", None),
    ("How many biosimilar products have been approved by the FDA?", "factual", None),  # Q1
    (
        "What are the BLA IDs of the biosimilar product applications for HUMIRA that have been successfully approved?",
        "linkable_reasoning",
        "bridging",
    ),
    (
        "How many interchangeable biosimilar products have been approved by the FDA?",
        "linkable_reasoning",
        "quantitative",
    ),  # Q2
    (
        "Please provide the product name of the latest biosimilar product for HUMIRA that was successfully approved.",
        "linkable_reasoning",
        "comparative",
    ),
    (
        "Please analyze the labels and see if you can find major differences in the clinical study approaches between "
        "Idacio, Cyltezo, and Amjevita.",
        "linkable_reasoning",
        "summarizing",
    ),
    (
        "Please provide an approximate prediction: How many biosimilar products are expected to be approved in 2024?",
        "predictive",
        None,
    ),  # Q3
    (
        "Assuming a biosimilar candidate with Humira as the reference, how can one prepare for the BLA to minimize the "
        "application time?",
        "creative",
        None,
    ),
]


def _definition(kind: str) -> str:
    """The first sentence of the class's definition in the classification prompt (§3.2's own sentences)."""
    return CLASSIFY.split(f"{KINDS.index(kind) + 1}. {kind}: ", 1)[1].split(". ", 1)[0]


@pytest.mark.parametrize(("question", "kind", "subtype"), FIGURE_1, ids=[f"fig1-{i}" for i in range(1, 9)])
def test_figure_1_examples_are_answered_by_their_level(kb: KB, question: str, kind: str, subtype: str | None) -> None:
    """Figure 1's questions through the real parse and the registry. The scripted model first echoes the class
    with the prompt's definition of it ("predictive: ... may not be purely factual", "creative: ... the
    availability of factual information ..."), which is no class, then answers the class in the repair. Factual
    questions are answered by L1 (one QA prompt, no proposer), every other class by Algorithm 1 (the proposer
    runs): what ran is checked, not the routing table."""
    script = Script(cls(f"{kind}: {_definition(kind)}", subtype), cls(kind, subtype, rationale="Figure 1"))
    answer = answer_auto(question, _ctx(kb, script))
    assert question in script.prompts[0].split("# Question", 1)[1]
    assert script.kinds[:2] == ["classify", "classify+repair"]
    assert (answer.question_class, answer.question_subtype) == (kind, subtype)
    if kind == "factual":
        assert script.kinds[2:] == ["answer"] and answer.route == "L1:l1"
    else:
        assert script.kinds[2] == "propose" and script.kinds[-1] == "answer" and answer.route == "L2:pike"
        assert trace_of(answer, TraceRound) and trace_of(answer, TraceRound)[0].proposals == [HOP1]


def test_auto_is_the_default_with_an_llm_only(kb: KB, data: dict[str, Any]) -> None:
    question = data["questions"][0]["question"]
    store, settings, embedder = kb
    script = Script(cls("factual"))
    answer = answer_question(question, QueryContext(store, settings, embedder, ScriptedLLM(script)))
    assert answer.method == "auto" and answer.route == "L1:l1" and script.kinds == ["classify", "answer"]
    offline = answer_question(question, QueryContext(store, settings, embedder, None))
    assert offline.method == "propagation" and offline.retrieval_only and offline.route is None
    plain = answer_question(question, _ctx(kb, Script()), method="l1")  # 'l1' alone: no classification
    assert plain.method == "l1" and plain.question_class is None and plain.route is None


def test_trace_render_json_and_stream_carry_class_and_route(kb: KB, data: dict[str, Any]) -> None:
    from kbgraph.query.streaming import stream_answer

    question = data["questions"][0]["question"]
    answer = answer_auto(question, _ctx(kb, Script(cls("linkable_reasoning", "bridging"))))
    console = Console(record=True, width=200)
    render_answer(console, answer, trace=True)
    text = console.export_text()
    assert "Rationale\nclass: linkable_reasoning (bridging) → route L2:pike\nround 1:" in text
    console = Console(record=True, width=200)
    render_answer(console, answer, trace=False)
    assert "route" not in console.export_text()
    console = Console(record=True, width=200)
    render_answer(console, answer, trace=False, route=True, body=False)  # a streamed ask printed the rounds
    assert "class: linkable_reasoning (bridging) → route L2:pike" in console.export_text()
    dumped = json.loads(answer.model_dump_json())
    assert (dumped["question_class"], dumped["question_subtype"], dumped["route"]) == (
        "linkable_reasoning",
        "bridging",
        "L2:pike",
    )

    events = list(stream_answer(question, _ctx(kb, Script(cls("factual")), l1_k=3)))
    final = events[-1].answer
    assert events[-1].type == "answer" and (final.question_class, final.route) == ("factual", "L1:l1")  # type: ignore[union-attr]
    deltas = [e.text for e in events if e.type == "delta"]
    assert len(deltas) > 1 and "".join(deltas) == final.answer == "G. Stanley Hall"  # type: ignore[union-attr]  # L1 streams its answer


# --- the saved rationale, both stores -------------------------------------------------------------------------
def test_saved_question_has_class_and_route(
    store: GraphStore, backend_settings: Settings, graphs: tuple[list[DocumentGraph], Embedder], data: dict[str, Any]
) -> None:
    from kbgraph.ingest.write import write_documents
    from kbgraph.query.rationale import save_answer

    write_documents(store, graphs[0][:6])  # the question's two gold passages first, then four others
    question = data["questions"][0]["question"]
    llm = ScriptedLLM(Script(cls("linkable_reasoning", "comparative")))
    ctx = QueryContext(store, backend_settings, graphs[1], llm)
    answer = answer_auto(question, ctx)
    saved = save_answer(store, answer)
    (row,) = store.run("browse/question", {"question": saved.question_id})
    q = row["question"]
    assert (q["method"], q["question_class"], q["question_subtype"], q["route"]) == (
        "auto",
        "linkable_reasoning",
        "comparative",
        "L2:pike",
    )
    assert q["rationale"].startswith("Question class: linkable_reasoning (comparative)")
    # USED keeps Algorithm 1's round (the routed method is 'pike'), PROPOSED its proposal
    assert [u["round"] for u in row["used"]] == [1] and saved.sub_questions == 1
    (listed,) = store.run("browse/questions", {"limit": 5})
    assert (listed["question_class"], listed["route"]) == ("linkable_reasoning", "L2:pike")
    # another method's Question has no class
    other = save_answer(store, answer_question(question, QueryContext(store, backend_settings, graphs[1], None)))
    (row,) = store.run("browse/question", {"question": other.question_id})
    q = row["question"]
    assert q.get("question_class") is None and q.get("route") is None


# --- kbgraph eval: per-question records and metrics per class ------------------------------------------------
def test_eval_records_class_and_reports_metrics_per_class(kb: KB, data: dict[str, Any], tmp_path: Path) -> None:
    from kbgraph.kb import KnowledgeBase
    from kbgraph.eval import evaluate
    from kbgraph.eval import metrics as M

    questions = data["questions"]
    kinds = {
        questions[0]["question"]: cls("linkable_reasoning", "bridging"),
        questions[1]["question"]: cls("factual"),
        questions[2]["question"]: cls("factual"),
        questions[3]["question"]: cls("predictive"),
    }
    gold = {q["question"]: q["answers"][0] for q in questions}

    def respond(messages: Messages) -> str:
        kind, text = _kind(messages), _prompt(messages)
        question = next(q for q in gold if q in text) if kind in ("classify", "answer", "judge") else None
        if kind == "classify":
            return kinds[question]
        if kind == "judge":
            return "Yes" if gold[question] == questions[1]["answers"][0] else "No"
        if kind == "propose":
            return json.dumps({"thinking": "scripted", "sub_questions": []})
        # the factual question 2 is answered right, every other one wrong
        answer = gold[question] if question == questions[1]["question"] else "no idea"
        return json.dumps({"answer": answer, "rationale": "scripted"})

    out = tmp_path / "run"
    with KnowledgeBase(settings=kb[1]) as k:
        summary = evaluate(
            k,
            data["prefix"],
            methods=["auto", "l1", "dense"],
            out=out,
            llm=ScriptedLLM(respond),
            ingest=False,
            plots=False,
            progress=False,
        )
    records = [json.loads(x) for x in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 12 and all(r["error"] is None for r in records)
    auto = {r["question"]: r for r in records if r["method"] == "auto"}
    want = {
        questions[0]["question"]: ("linkable_reasoning", "bridging", "L2:pike"),
        questions[1]["question"]: ("factual", None, "L1:l1"),
        questions[2]["question"]: ("factual", None, "L1:l1"),
        questions[3]["question"]: ("predictive", None, "L2:pike"),
    }
    assert {q: (r["question_class"], r["question_subtype"], r["route"]) for q, r in auto.items()} == want
    assert all(r["question_class"] is None for r in records if r["method"] != "auto")

    by_class = json.loads((out / "summary.json").read_text())["by_class"]
    assert list(by_class) == ["factual", "linkable_reasoning", "predictive"]
    assert by_class["factual"]["questions"] == 2 and by_class["factual"]["routes"] == {"L1:l1": 2}
    assert by_class["linkable_reasoning"]["routes"] == {"L2:pike": 1}
    factual_ids = {r["question_id"] for r in auto.values() if r["question_class"] == "factual"}
    for method in ("auto", "l1", "dense"):  # every method's figures over the factual questions alone, recomputed
        recs = [r for r in records if r["method"] == method and r["question_id"] in factual_ids]
        got = by_class["factual"]["methods"][method]
        assert got["questions"] == 2
        for k in (1, 5):  # type: ignore[assignment]
            want_r = sum(M.recall_at_k(r["retrieved_passage_ids"], r["gold_passage_ids"], k) for r in recs) / 2  # type: ignore[arg-type, misc]
            assert got["metrics"][f"R@{k}"] == pytest.approx(want_r)
    assert by_class["factual"]["methods"]["auto"]["metrics"]["em"] == pytest.approx(0.5)  # q2 right, q3 wrong
    assert by_class["factual"]["methods"]["auto"]["metrics"]["accuracy"] == pytest.approx(0.5)
    assert by_class["linkable_reasoning"]["methods"]["auto"]["metrics"]["em"] == 0.0
    assert summary.methods["auto"].metrics["em"] == pytest.approx(0.25)  # all four questions together
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## By question class" in report
    assert "| factual | 2 | L1:l1 2 | auto | 2 | 50.0 |" in report
    assert "| predictive | 1 | L2:pike 1 | dense | 1 |" in report

    with KnowledgeBase(settings=kb[1]) as k:  # without 'auto' there are no classes
        plain = evaluate(
            k,
            data["prefix"],
            methods=["dense"],
            limit=2,
            out=tmp_path / "plain",
            llm=None,
            ingest=False,
            plots=False,
            progress=False,
        )
    assert plain.by_class == {} and "By question class" not in (tmp_path / "plain" / "report.md").read_text()


# --- the real local LLM ---------------------------------------------------------------------------------------
def test_auto_with_the_real_llm(kb: KB, data: dict[str, Any], llm_server: LLMServerInfo, tmp_path: Path) -> None:
    """SmolLM2-135M through llama.cpp's server: the classification request completes (whatever class the tiny
    model gives, or 'unknown'), is recorded in the Answer and the saved Question, and the routed method runs."""
    from pydantic import SecretStr

    from kbgraph.llm import get_llm
    from kbgraph.query.rationale import save_answer

    store, settings, embedder = kb
    s = settings.updated(
        {
            "llm_base_url": llm_server.base_url,
            "llm_model": llm_server.model,
            "llm_api_key": SecretStr("none"),
            "llm_cache_dir": tmp_path,
            "llm_timeout": 300.0,
            "llm_max_tokens": 120,
            "decompose_rounds": 1,
            "l1_k": 2,
        }
    )
    llm = get_llm(s)
    answer = answer_auto(data["questions"][0]["question"], QueryContext(store, s, embedder, llm))
    assert answer.method == "auto" and answer.question_class in (*KINDS, "unknown")
    level = route(answer.question_class)
    assert answer.route == f"{level}:{'l1' if level == 'L1' else 'pike'}"
    assert llm.json_stats["ClassifyOutput"].answers + llm.json_stats["ClassifyOutput"].failed == 1  # type: ignore[union-attr]
    routed = "QAOutput" in llm.json_stats and (level == "L1" or "Proposal" in llm.json_stats)  # type: ignore[union-attr]
    assert routed and answer.usage.calls >= 2 and answer.usage.prompt_tokens > 0
    assert answer.rationale.startswith(f"Question class: {answer.question_class}")
    saved = save_answer(store, answer)
    (row,) = store.run("browse/question", {"question": saved.question_id})
    assert (row["question"]["question_class"], row["question"]["route"]) == (answer.question_class, answer.route)
    print(
        f"real LLM: class {answer.question_class} ({answer.question_subtype}), route {answer.route}, "
        f"{answer.usage.calls} calls, {answer.usage.seconds:.1f} s; classifier: {answer.rationale[:300]!r}"
    )
