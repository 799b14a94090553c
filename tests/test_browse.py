"""Neo4j Browser exploration on both real stores: the ready queries of cypher/browse/ over an ingested real
corpus (two PDFs of examples/docs), saved rationales (kbgraph ask --save) and what deleting a document does
to them, the `kbgraph browse` command, and the Browser style with the server setting that applies it.

The tests of one store share one ingested corpus (module scope) and run in file order: read-only queries
first, then the tests that save questions, then the one that deletes a document (last: it changes the corpus;
it saves the Algorithm 1 rationale and the question it checks itself, so it also runs alone). Counts are read
from the store, never copied from an earlier run's output.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kbgraph import browse, cypher
from kbgraph.errors import ConfigError, StoreError
from kbgraph.kb import KnowledgeBase
from kbgraph.llm.base import Messages
from kbgraph.models import NODE_LABELS, RELATIONSHIP_TYPES
from kbgraph.neo4j_local import browser_style
from kbgraph.query.models import Answer, TraceRound
from kbgraph.store import backend_name, store_class
from kbgraph.store.base import Row
from tests.backends import BACKENDS
from tests.traces import trace_of

if TYPE_CHECKING:
    from kbgraph.llm.fake import ScriptedLLM
    from kbgraph.settings import Settings
    from kbgraph.store.transaction import Transaction

REPO = Path(__file__).resolve().parents[1]
FEDERAL_REGISTER = "docs/pdf/us_federal_register_2020-17221.pdf"  # 53 chunks under 31 sections
FAA_HANDBOOK = "docs/pdf/faa_amt_general_handbook_sample.pdf"  # 3 chunks, no headings
FR_TITLE, FAA_TITLE = "Proposed Rules", "AMT General Handbook"
QUESTION = "Which airplanes does the FAA's proposed airworthiness directive apply to?"


class BrowseKB(KnowledgeBase):
    """The module's knowledge base, with the examples folder its files came from."""

    examples_dir: Path


@pytest.fixture(scope="module", params=BACKENDS)
def corpus(request: pytest.FixtureRequest, falkor_settings: Settings, examples_dir: Path) -> Iterator[BrowseKB]:
    """A knowledge base holding the two PDFs, ingested in one run, on each store."""
    if request.param == "falkordb":
        settings = falkor_settings.updated({"name": f"browse{uuid.uuid4().hex[:8]}"})
    else:
        settings = request.getfixturevalue("neo4j_settings")
    kb = BrowseKB(settings=settings)
    kb.reset()
    report = kb.ingest([examples_dir / FEDERAL_REGISTER, examples_dir / FAA_HANDBOOK], progress=False)
    assert report.errors == [] and report.added == 2, report
    kb.examples_dir = examples_dir
    yield kb
    kb.reset()
    kb.close()


def _ids(nodes: Iterable[dict[str, Any]]) -> list[str]:
    return [n["id"] for n in nodes]


def _no_embeddings(value: Any) -> bool:
    if isinstance(value, dict):
        return "embedding" not in value and all(_no_embeddings(v) for v in value.values())
    if isinstance(value, list):
        return all(_no_embeddings(v) for v in value)
    return True


# --- the ready queries ----------------------------------------------------------------------------------
def test_document_query_returns_the_three_layers(corpus: BrowseKB) -> None:
    stats = corpus.stats()
    fr = corpus.browse("document", document=FR_TITLE, limit=1000, per_chunk=1000)
    faa = corpus.browse("document", document="amt general", limit=1000, per_chunk=1000)
    # every chunk of both documents, once, in reading order
    assert len(fr) + len(faa) == stats.nodes["Chunk"] and len(fr) > len(faa) > 0  # (a 60-page PDF, a 2-page one)
    assert len({r["chunk"]["id"] for r in fr + faa}) == stats.nodes["Chunk"]
    for rows, title in ((fr, FR_TITLE), (faa, FAA_TITLE)):
        doc_id = rows[0]["document"]["id"]
        assert {r["document"]["title"] for r in rows} == {title}
        assert [r["chunk"]["order"] for r in rows] == sorted(r["chunk"]["order"] for r in rows)
        assert all(r["chunk"]["document_id"] == doc_id and r["chunk"]["text"].strip() for r in rows)
        assert all(s["document_id"] == doc_id for r in rows for s in r["sections"])
    # information-resource layer: the PDF's headings as a section path from the document down to each chunk
    assert all(r["sections"] for r in fr) and not any(r["sections"] for r in faa)
    nested = [r for r in fr if len(r["sections"]) >= 2]
    assert nested, "no chunk under a nested section"
    for r in nested:
        assert r["chunk"]["section_path"] == " > ".join(s["title"] for s in r["sections"])
    assert {s["title"] for r in fr for s in r["sections"]} >= {"Comments Invited", "Background", "Costs of Compliance"}
    # distilled-knowledge layer: with no cap, every atomic question and triple of the graph appears once
    rows = fr + faa
    assert sum(len(r["questions"]) for r in rows) == stats.nodes["AtomicQuestion"]
    assert sum(len(r["triples"]) for r in rows) == stats.nodes["Triple"]
    entities = {e["id"] for r in rows for e in r["entities"]}
    assert 0 < len(entities) <= stats.nodes["Entity"]
    for r in rows:
        doc_id = r["document"]["id"]
        assert all(q["document_id"] == doc_id and q["text"] for q in r["questions"])
        assert all(t["document_id"] == doc_id and t["predicate"] for t in r["triples"])
    assert _no_embeddings(rows)
    # the defaults: 25 chunks, 3 of each kind per chunk, the most recently ingested document
    default = corpus.browse("document")
    assert default[0]["document"]["title"] in (FR_TITLE, FAA_TITLE)
    capped = corpus.browse("document", document=FR_TITLE)
    assert len(capped) == 25 and [r["chunk"]["id"] for r in capped] == [r["chunk"]["id"] for r in fr[:25]]
    assert max(len(r[k]) for r in capped for k in ("questions", "triples", "entities")) == 3
    by_id = corpus.browse("document", document=fr[0]["document"]["id"], limit=2)
    assert [r["chunk"]["id"] for r in by_id] == [r["chunk"]["id"] for r in fr[:2]]
    assert corpus.browse("document", document="no such document title") == []


def test_entity_query_gives_neighbourhood_and_mentions(corpus: BrowseKB) -> None:
    (row,) = corpus.browse("entity", entity="faa", limit=1000)
    assert row["entity"]["name"] == "FAA"  # an exact (case-insensitive) name wins over names containing it
    assert row["mentions"] == len(row["chunks"]) > 10
    assert all("faa" in c["text"].lower() for c in row["chunks"])
    assert {d["title"] for d in row["documents"]} == {FR_TITLE}
    assert row["neighbours"] and len(set(_ids(row["neighbours"]))) == len(row["neighbours"])
    assert row["entity"]["id"] not in _ids(row["neighbours"])
    assert row["triples"] and all("faa" in (t["subject"] + " " + t["object"]).lower() for t in row["triples"])
    (capped,) = corpus.browse("entity", entity=row["entity"]["id"], limit=2)
    assert capped["mentions"] == row["mentions"] and len(capped["chunks"]) == 2
    assert len(capped["neighbours"]) <= 2 and len(capped["triples"]) <= 2
    (most,) = corpus.browse("entity")  # '' = the most mentioned entity
    tops = corpus.browse("top_entities", limit=50)
    assert most["mentions"] >= max(t["mentions"] for t in tops)
    assert corpus.browse("entity", entity="zzz-no-such-entity") == []


def test_top_entities_by_degree(corpus: BrowseKB) -> None:
    rows = corpus.browse("top_entities", limit=10)
    assert len(rows) == 10
    degrees = [r["degree"] for r in rows]
    assert degrees == sorted(degrees, reverse=True) and degrees[0] > degrees[-1]
    assert all(r["degree"] == r["mentions"] + r["related"] and r["name"] == r["entity"]["name"] for r in rows)
    (first,) = corpus.browse("entity", entity=rows[0]["entity"]["id"], limit=1000)
    assert first["mentions"] == rows[0]["mentions"]
    assert rows[0]["name"] == "FAA"  # 43 chunks of the Federal Register mention it


def test_changed_lists_the_last_runs_documents(corpus: BrowseKB) -> None:
    (row,) = corpus.browse("changed")
    assert row["status"] == "completed" and row["added"] == 2
    assert sorted(d["title"] for d in row["documents"]) == sorted([FR_TITLE, FAA_TITLE])
    first_run = row["run"]["id"]
    # an unchanged re-run changes nothing; the earlier run can still be asked for by id
    report = corpus.ingest([corpus.examples_dir / FAA_HANDBOOK], progress=False)
    assert report.unchanged == 1
    (again,) = corpus.browse("changed")
    assert again["run"]["id"] != first_run and again["documents"] == [] and again["added"] == 0
    (earlier,) = corpus.browse("changed", run=first_run)
    assert len(earlier["documents"]) == 2


def test_orphans_query_finds_none(corpus: BrowseKB) -> None:
    assert corpus.browse("orphans") == []
    assert corpus.store.orphans() == []


def test_browser_text_with_values_written_in_matches_parameters(corpus: BrowseKB) -> None:
    """The statement a person runs in Browser with the values as literals gives the rows kbgraph gets with
    parameters, on both stores (quotes and backslashes included)."""
    dialect = store_class(corpus.settings).dialect
    for name, params in [
        ("document", {"document": FR_TITLE, "limit": 4}),
        ("entity", {"entity": "faa"}),
        ("top_entities", {"limit": 5}),
        ("document", {"document": "it's a \\ 'trap'"}),
    ]:
        query = browse.get(name)
        values = browse.resolve_params(query, params)  # type: ignore[arg-type]
        text = browse.inline_params(cypher.load(query.statement, dialect), values)
        assert "$" not in text
        literal_rows = corpus.store._execute(text.rstrip(";"), {})
        param_rows = corpus.store.run(query.statement, values)
        assert literal_rows == param_rows, name
        assert name != "document" or params["document"] != FR_TITLE or len(param_rows) == 4  # type: ignore[index]


def test_unknown_query_or_parameter_is_a_usage_error(corpus: BrowseKB) -> None:
    with pytest.raises(ConfigError, match="no browse query 'nope'"):
        corpus.browse("nope")
    with pytest.raises(ConfigError, match="has no parameter 'title'"):
        corpus.browse("document", title="x")
    with pytest.raises(ConfigError, match="must be an integer"):
        corpus.browse("top_entities", limit="ten")
    assert corpus.browse("top-entities", limit="3") and len(corpus.browse("top_entities", limit="3")) == 3


# --- saved rationales ------------------------------------------------------------------------------------
def _question_row(kb: KnowledgeBase, question_id: str) -> dict[str, Any]:
    rows = kb.browse("question", question=question_id)
    assert len(rows) == 1, rows
    assert rows[0]["question"]["id"] == question_id
    return rows[0]


def test_ask_save_writes_retrieval_only_rationale(corpus: BrowseKB) -> None:
    answer = corpus.ask(QUESTION, save=True)
    assert answer.retrieval_only and answer.citations
    saved = corpus.last_saved
    assert saved is not None and saved.question_id.startswith("question:")
    row = _question_row(corpus, saved.question_id)
    q = row["question"]
    assert (q["text"], q["answer"], q["method"], q["retrieval_only"]) == (QUESTION, answer.answer, "propagation", True)
    cited = list(dict.fromkeys(c.chunk_id for c in answer.citations))
    scores = {c.id: c.score for c in answer.chunks}
    assert [u["chunk_id"] for u in row["used"]] == cited and saved.used == len(cited)
    assert all(u["round"] == 0 for u in row["used"])
    assert all(u["score"] == pytest.approx(scores[u["chunk_id"]], abs=1e-6) for u in row["used"])
    assert {c["id"] for c in row["chunks"]} == set(cited)
    assert row["sub_questions"] == [] and row["matched"] == [] and saved.sub_questions == 0
    # provenance: the path from each used chunk's document through its sections
    assert len(row["provenance"]) == len(cited)
    assert {p[0]["title"] for p in row["provenance"]} == {c.document_title for c in answer.citations}
    assert all(
        p[0]["id"].startswith("doc:") and all(n["id"].startswith("sec:") for n in p[1:]) for p in row["provenance"]
    )
    # '' finds the last question saved; part of its text finds it too
    assert corpus.browse("question")[0]["question"]["id"] == saved.question_id
    assert corpus.browse("question", question="FAA's proposed")[0]["question"]["id"] == saved.question_id
    # another ask of the same question is another Question node
    corpus.ask(QUESTION, save=True)
    assert corpus.last_saved is not None and corpus.last_saved.question_id != saved.question_id
    assert corpus.stats().nodes["Question"] == 2
    assert corpus.browse("orphans") == []


def _scripted_pike_llm() -> ScriptedLLM:
    """Algorithm 1 with scripted LLM turns (the LLM is not under test here; the saved rationale is): round 1
    proposes two sub-questions and selects the first candidate, round 2 one sub-question and its second
    candidate, round 3 proposes nothing."""
    from kbgraph.llm.fake import ScriptedLLM

    proposals = iter(
        [
            ["Which airplanes are affected by the proposed AD?", "What does the proposed AD require?"],
            ["What is the estimated cost of compliance?"],
            [],
        ]
    )
    picks = iter([1, 2, 1, 1])

    def respond(messages: Messages) -> str:
        text = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        if "raise atomic sub-questions" in text:
            return json.dumps({"thinking": "scripted", "sub_questions": next(proposals)})
        if "# Sub-Questions You Can Choose From" in text:
            return json.dumps({"thinking": "scripted", "question_idx": next(picks)})
        if "# Paragraph List You Can Choose From" in text:
            return json.dumps({"thinking": "scripted", "paragraph_idx": 1})
        return json.dumps({"answer": "Pilatus Aircraft Ltd. Model PC-12 airplanes", "rationale": "scripted"})

    return ScriptedLLM(respond)


def test_save_pike_rationale_rounds_subquestions_matches(corpus: BrowseKB) -> None:
    from kbgraph.query.rationale import rationale_rows, save_answer

    answer = answer_pike_cached(corpus)
    trace = trace_of(answer, TraceRound)
    joined = [r for r in trace if r.chunk_id]
    assert len(joined) == 2 and trace[-1].note.startswith("stopped")
    saved = save_answer(corpus.store, answer)
    row = _question_row(corpus, saved.question_id)
    assert row["question"]["method"] == "pike" and row["question"]["rounds"] == len(answer.trace)
    # PROPOSED: each round's proposals in order (plus the question itself where a round fell back to it)
    expected = [(r.round, p) for r in trace for p in r.proposals]
    got = [(s["round"], s["text"]) for s in row["sub_questions"] if not s["fallback"]]
    assert got == expected
    assert all(s["question_id"] == saved.question_id for s in row["sub_questions"])
    # MATCHED: one edge per (proposal, atomic question) candidate, with its similarity; the selection marked
    rows = rationale_rows(answer, saved.asked_at)
    assert saved.matched == len(rows.matched) == len(row["matched"]) > 0
    sub_text = {s["id"]: s["text"] for s in row["sub_questions"]}
    for rnd in joined:
        sel = rnd.selected
        assert sel is not None
        hits = [m for m in row["matched"] if m["atomic_question_id"] == sel.question_id and m["selected"]]
        assert len(hits) == 1 and sub_text[hits[0]["sub_question_id"]] == sel.query
        assert hits[0]["score"] == pytest.approx(sel.score, abs=1e-6)
    assert sum(m["selected"] for m in row["matched"]) == len(joined)
    cand_scores = {(c.query, c.question_id): c.score for r in trace for c in r.candidates if c.question_id}
    for m in row["matched"]:
        assert m["score"] == pytest.approx(
            cand_scores[(sub_text[m["sub_question_id"]], m["atomic_question_id"])], abs=1e-6
        )
    assert {r.selected.question_id for r in joined if r.selected is not None} <= set(_ids(row["atomic_questions"]))
    # USED: the chunk each round added to the context, with that round
    assert [(u["chunk_id"], u["round"]) for u in row["used"]] == [(r.chunk_id, r.round) for r in joined]
    assert saved.used == 2 and saved.sub_questions == len(row["sub_questions"])
    assert corpus.browse("orphans") == []


def test_save_is_one_unit_of_work(corpus: BrowseKB, monkeypatch: pytest.MonkeyPatch) -> None:
    """A statement failing half-way leaves nothing of the Question (Neo4j: rollback; FalkorDB: the
    compensation deletes it)."""
    from kbgraph.query.rationale import rationale_rows, save_answer
    from kbgraph.store.transaction import Transaction

    answer = answer_pike_cached(corpus)
    asked_at = "2025-01-01T00:00:00.000000+00:00"
    qid = rationale_rows(answer, asked_at).question["id"]
    before = corpus.stats()
    real_run = Transaction.run

    def failing(self: Transaction, name: str, params: Row | None = None) -> list[Row]:
        if name == "rationale/link_matched":
            raise StoreError("injected failure")
        return real_run(self, name, params)

    monkeypatch.setattr(Transaction, "run", failing)
    with pytest.raises(StoreError, match="injected"):
        save_answer(corpus.store, answer, asked_at=asked_at)
    monkeypatch.setattr(Transaction, "run", real_run)
    assert corpus.browse("question", question=qid) == []
    after = corpus.stats()
    assert after.nodes == before.nodes and after.relationships == before.relationships
    saved = save_answer(corpus.store, answer, asked_at=asked_at)  # and the same save works once healthy
    again = save_answer(corpus.store, answer, asked_at=asked_at)  # idempotent: same ids, merged
    assert saved == again and _question_row(corpus, qid)["question"]["asked_at"] == asked_at
    assert corpus.stats().nodes["Question"] == before.nodes["Question"] + 1


_PIKE: dict[str, Answer] = {}


def answer_pike_cached(corpus: KnowledgeBase) -> Answer:
    from kbgraph.query.context import QueryContext
    from kbgraph.query.methods.decompose import answer_pike

    key = backend_name(corpus.settings)
    if key not in _PIKE:
        ctx = QueryContext(corpus.store, corpus.settings, corpus.embedder, _scripted_pike_llm())
        _PIKE[key] = answer_pike(QUESTION, ctx)
    return _PIKE[key]


def test_cli_ask_save_and_browse(
    corpus: BrowseKB, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kbgraph import cli
    from kbgraph.cli import common

    monkeypatch.setattr(common, "settings", lambda: corpus.settings)
    assert cli.main(["ask", "What are the costs of compliance?", "--save", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    qid = out["saved"]["question_id"]
    row = _question_row(corpus, qid)
    assert row["question"]["text"] == "What are the costs of compliance?"
    assert [u["chunk_id"] for u in row["used"]] == list(dict.fromkeys(c["chunk_id"] for c in out["citations"]))
    assert cli.main(["ask", "What are the costs of compliance?"]) == 0  # without --save nothing is written
    assert "saved as" not in capsys.readouterr().err
    assert corpus.browse("question")[0]["question"]["id"] == qid


def test_questions_lists_saved_questions(corpus: BrowseKB) -> None:
    before = corpus.stats().nodes.get("Question", 0)
    saved = [corpus.ask(q, save=True) for q in ("What does the rule require?", "Who inspects the aircraft?")]
    rows = corpus.browse("questions")
    assert len(rows) == corpus.stats().nodes["Question"] == before + len(saved)  # whatever earlier tests saved
    assert {r["text"] for r in rows} >= {"What does the rule require?", "Who inspects the aircraft?"}
    assert [r["asked_at"] for r in rows] == sorted((r["asked_at"] for r in rows), reverse=True)
    for r in rows:
        assert r["used"] == len(_question_row(corpus, r["question"]["id"])["used"]) > 0
        assert r["text"] == r["question"]["text"] and r["method"] in ("propagation", "pike")


def test_deleting_a_document_removes_rationale_edges(corpus: BrowseKB) -> None:
    """Deleting the Federal Register detaches its chunks and atomic questions: no USED or MATCHED edge is left
    pointing at them, the others stay, and so do the Questions and SubQuestions (with their answers). Its own
    saves: an Algorithm 1 rationale (MATCHED edges) and a score-propagation answer, both citing the Register
    (whatever earlier tests saved is checked too)."""
    from kbgraph.query.rationale import save_answer

    save_answer(corpus.store, answer_pike_cached(corpus))
    corpus.ask(QUESTION, save=True)
    before = {q["question"]["id"]: _question_row(corpus, q["question"]["id"]) for q in corpus.browse("questions")}
    fr_rows = corpus.browse("document", document=FR_TITLE, limit=1000, per_chunk=1000)
    fr_id = fr_rows[0]["document"]["id"]
    assert all(any(c["document_id"] == fr_id for c in r["chunks"]) for r in before.values())
    assert any(r["matched"] for r in before.values())
    counts = corpus.delete(str(corpus.examples_dir / FEDERAL_REGISTER))
    assert counts["documents"] == 1 and counts["chunks"] == len({r["chunk"]["id"] for r in fr_rows})
    kept_used = kept_matched = 0
    for qid, old in before.items():
        row = _question_row(corpus, qid)
        assert row["question"]["answer"] == old["question"]["answer"]
        assert [s["id"] for s in row["sub_questions"]] == [s["id"] for s in old["sub_questions"]]
        used = [u for u, c in zip(old["used"], old["chunks"], strict=True) if c["document_id"] != fr_id]
        assert row["used"] == used and all(c["document_id"] != fr_id for c in row["chunks"])
        atom_doc = {a["id"]: a["document_id"] for a in old["atomic_questions"]}
        matched = [m for m in old["matched"] if atom_doc[m["atomic_question_id"]] != fr_id]
        assert row["matched"] == matched and all(a["document_id"] != fr_id for a in row["atomic_questions"])
        kept_used += len(used)
        kept_matched += len(matched)
    stats = corpus.stats()
    assert stats.relationships.get("USED", 0) == kept_used
    assert stats.relationships.get("MATCHED", 0) == kept_matched
    assert stats.nodes["Question"] == len(before)
    assert corpus.browse("orphans") == []


# --- the catalogue, the CLI, the style ------------------------------------------------------------------
def test_every_browse_query_renders_for_browser() -> None:
    assert set(browse.CATALOGUE) == {
        "document",
        "entity",
        "question",
        "questions",
        "top_entities",
        "changed",
        "orphans",
    }
    from kbgraph.settings import Settings

    local = Settings(uri="bolt://127.0.0.1:7687", neo4j_http_port=7474)
    for name, query in browse.CATALOGUE.items():
        for dialect in cypher.DIALECTS:
            cypher.load(query.statement, dialect)
        out = browse.render(name, settings=local)
        assert out.param_lines == [f":param {p.name} => {browse.cypher_literal(p.default)}" for p in query.params]
        # the script: every :param line, then the statement, each ';'-terminated
        assert out.script.startswith("".join(f"{ln};\n" for ln in out.param_lines)) and out.script.endswith(";\n")
        assert out.cypher in out.script and out.script.count(";") == len(query.params) + 1
        assert out.editor_prefilled and out.graph_url
        assert out.url.startswith("http://127.0.0.1:7474/browser/?dbms=bolt%3A%2F%2F127.0.0.1%3A7687&db=neo4j&cmd=edit")
        args = [a for a in out.url.split("&") if a.startswith("arg=")]
        from urllib.parse import unquote

        assert "\n".join(unquote(a[4:]) for a in args) == out.script.rstrip("\n")
        assert out.note == ""
    aura = Settings(uri="neo4j+s://abcd1234.databases.neo4j.io")
    assert browse.render("orphans", settings=aura).url.startswith(
        "https://browser.neo4j.io/?dbms=neo4j%2Bs%3A%2F%2Fabcd1234.databases.neo4j.io&db=neo4j"
    )
    remote = Settings(uri="bolt://graph.example.org:7687")
    assert browse.render("orphans", settings=remote).browser_url.startswith("http://graph.example.org:7474/browser/")
    embedded = Settings(uri=None, neo4j_bolt_port=17000)
    out = browse.render("orphans", settings=embedded)
    assert "FalkorDB" in out.note and "dbms=bolt%3A%2F%2F127.0.0.1%3A17000" in out.url
    tricky = browse.render("entity", {"entity": "AT&T #1"}, settings=local)
    assert not tricky.editor_prefilled and "cmd=edit" not in tricky.url and tricky.graph_url == ""
    assert ":param entity => 'AT&T #1'" in tricky.script


def test_cypher_literals() -> None:
    lit = browse.cypher_literal
    assert lit("O'Brien \\ x") == "'O\\'Brien \\\\ x'"
    assert lit("a\nb\tc") == "'a\\nb\\tc'"
    assert (lit(25), lit(0.5), lit(True), lit(None)) == ("25", "0.5", "true", "null")
    assert lit(["a", 1]) == "['a', 1]" and lit({"k": "v"}) == "{`k`: 'v'}"
    assert browse.param_lines({"document": "x", "limit": 3}) == [":param document => 'x'", ":param limit => 3"]
    with pytest.raises(ConfigError, match="name=value"):
        browse.parse_param_args(["limit"])
    assert browse.parse_param_args(["document=a=b", "limit= 5"]) == {"document": "a=b", "limit": " 5"}
    assert browse.resolve_params(browse.get("entity"), {"limit": " 5"})["limit"] == 5


def test_cli_browse_prints_params_query_and_url(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbgraph import cli

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    rc = cli.main(
        [
            "--uri",
            "bolt://127.0.0.1:7687",
            "browse",
            "document",
            "--param",
            "document=O'Brien",
            "-p",
            "limit=5",
            "--open",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0
    lines = out.splitlines()
    i = lines.index(":param document => 'O\\'Brien';")
    assert lines[i + 1 : i + 3] == [":param limit => 5;", ":param per_chunk => 3;"]
    assert "MATCH (d:Document)" in out and "ORDER BY c.order;" in out
    assert "http://127.0.0.1:7474/browser/?dbms=bolt%3A%2F%2F127.0.0.1%3A7687&db=neo4j&cmd=edit&arg=" in out
    assert "no desktop browser" in err
    assert cli.main(["browse"]) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in browse.CATALOGUE)
    assert cli.main(["browse", "nope"]) == 2
    assert "no browse query 'nope'" in capsys.readouterr().err
    assert cli.main(["browse", "entity", "--param", "limit=many"]) == 2
    assert cli.main(["browse", "orphans", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["name"] == "orphans" and data["params"] == {"limit": 100}


def _grass() -> dict[str, dict[str, str]]:
    return browser_style.parse_grass(browser_style.grass_path().read_text(encoding="utf-8"))


def test_grass_styles_every_label_and_relationship() -> None:
    style = _grass()
    captions = {
        "Document": "{title}",
        "Section": "{title}",
        "Chunk": "{text}",
        "AtomicQuestion": "{text}",
        "Triple": "{text}",
        "Entity": "{name}",
        "IngestionRun": "{status}",
        "Question": "{text}",
        "SubQuestion": "{text}",
        "Tag": "{name}",
        "TagClass": "{name}",
    }
    assert set(captions) == set(NODE_LABELS)
    colours = []
    for label in NODE_LABELS:
        rule = style[f"node.{label}"]
        assert rule["caption"] == captions[label], label
        assert re.fullmatch(r"#[0-9A-F]{6}", rule["color"]) and re.fullmatch(r"\d+px", rule["diameter"]), label
        colours.append(rule["color"])
    assert len(set(colours)) == len(colours), "two labels share a colour"
    assert style["relationship"]["caption"] == "<type>" and style["relationship.RELATED"]["caption"] == "{predicate}"
    assert all(
        style.get(f"relationship.{t}", style["relationship"]).get("caption", "<type>") for t in RELATIONSHIP_TYPES
    )
    assert {"USED", "PROPOSED", "MATCHED"} <= {k.split(".", 1)[1] for k in style if k.startswith("relationship.")}


def test_grass_file_is_what_browsers_parser_reads() -> None:
    """Neo4j Browser 5.24 parses GraSS character by character: no comments, one ':' per declaration."""
    text = browser_style.grass_path().read_text(encoding="utf-8")
    assert "/*" not in text and "//" not in text
    for body in re.findall(r"\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}", text):
        for decl in filter(str.strip, body.split(";")):
            assert decl.count(":") == 1, decl


def test_post_connect_cmd_in_compose_and_local_neo4j(tmp_path: Path) -> None:
    import yaml

    from kbgraph.neo4j_local import Neo4jLocal
    from kbgraph.settings import Settings

    cmd = browser_style.post_connect_cmd()
    assert cmd.startswith("style {") and ";" not in cmd and "\n" not in cmd
    assert json.loads(cmd[len("style ") :]) == _grass()
    compose = yaml.safe_load((REPO / "docker" / "docker-compose.yml").read_text(encoding="utf-8"))
    assert compose["services"]["neo4j"]["environment"]["NEO4J_browser_post__connect__cmd"] == cmd
    local = Neo4jLocal(Settings(home=tmp_path, neo4j_local_home=tmp_path / "neo4j"))
    local._write_conf()
    conf = (local.conf_dir / "neo4j.conf").read_text(encoding="utf-8").splitlines()
    assert f"browser.post_connect_cmd={cmd}" in conf
