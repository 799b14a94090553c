"""End-to-end evaluation (kbgraph.eval) on a real embedded FalkorDB knowledge base built by the real
ingestion pipeline from a small real data set: 20 MuSiQue questions, their 50 gold passages and 100 other
passages of the same corpus, in the normalized format.

Checked: Recall@k and supporting-fact recall are what the retrieved passage ids give (recomputed here), those
ids are the passages of the chunks the knowledge base returns (re-queried from the store, and the same ranking
comes back from ``kb.retrieve`` / BM25 now), the run resumes after a --limit stop and after an interruption
mid-run (finished pairs are not run again), LLM methods are skipped with a recorded reason when no LLM is
configured, and with a scripted LLM (plumbing only: tokens, judge, resume) answers are scored. The CLI verb runs
the same library call.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbgraph.errors import ConfigError
from kbgraph.kb import KnowledgeBase
from kbgraph.llm.base import Messages
from kbgraph.llm.fake import ScriptedLLM
from kbgraph.eval import metrics as M
from kbgraph.eval import NO_LLM, evaluate, load_dataset
from kbgraph.models import DocumentGraph
from kbgraph.query.prompts import SYSTEM_JUDGE
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore

RETRIEVAL = ["dense", "bm25", "hierarchical", "propagation"]
N_QUESTIONS, N_OTHERS = 20, 100


@pytest.fixture(scope="module")
def dataset(examples_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """<folder>/mini.questions.jsonl + mini.corpus.jsonl: the first 20 MuSiQue questions, their gold passages
    and 100 other passages drawn with a fixed seed, all verbatim from examples/multihop/musique."""
    base = examples_dir / "multihop" / "musique"
    questions = [json.loads(x) for x in (base / "hipporag_train100.questions.jsonl").open(encoding="utf-8")]
    questions = questions[:N_QUESTIONS]
    passages = {p["id"]: p for p in map(json.loads, (base / "hipporag_train100.corpus.jsonl").open(encoding="utf-8"))}
    gold = list(dict.fromkeys(pid for q in questions for pid in q["gold_passage_ids"]))
    others = random.Random(0).sample(sorted(set(passages) - set(gold)), N_OTHERS)
    folder = tmp_path_factory.mktemp("musique20")
    (folder / "mini.questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    (folder / "mini.corpus.jsonl").write_text(
        "".join(json.dumps(passages[pid]) + "\n" for pid in gold + others), encoding="utf-8"
    )
    return folder / "mini"


@pytest.fixture(scope="module")
def kb_settings(falkor_settings: Settings, dataset: Path) -> Iterator[Settings]:
    """The session's embedded FalkorDB, a graph of this module's own, the data set's corpus ingested once."""
    settings = falkor_settings.updated({"name": f"eval{uuid.uuid4().hex[:8]}", "llm_model": None})
    with KnowledgeBase(settings=settings) as kb:
        report = kb.ingest([Path(f"{dataset}.corpus.jsonl")], progress=False)
        assert report.failed == 0 and report.added == 150
    yield settings
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()


def _records(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]


def test_recall_comes_from_the_passages_the_kb_returned_and_the_run_resumes(
    kb_settings: Settings, dataset: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    with KnowledgeBase(settings=kb_settings) as kb:
        first = evaluate(kb, dataset, methods=RETRIEVAL, limit=8, out=out, llm=None, progress=False)
        assert first.new_records == 8 * 4 and first.reused_records == 0
        assert first.ingest["added"] == 0 and first.ingest["unchanged"] == 150  # type: ignore[index]  # the KB is reused, not rebuilt
        stamps = {(r["question_id"], r["method"]): r["finished_at"] for r in _records(out)}
        with (out / "results.jsonl").open("a", encoding="utf-8") as fh:
            fh.write('{"question_id": "cut short by a cra')  # a line a kill -9 left half-written
        second = evaluate(kb, dataset, methods=RETRIEVAL, limit=N_QUESTIONS, out=out, llm=None, progress=False)
        assert second.reused_records == 8 * 4 and second.new_records == (N_QUESTIONS - 8) * 4
        records = _records(out)
        assert len(records) == N_QUESTIONS * 4  # the half line is gone, nothing ran twice
        for r in records:
            if (r["question_id"], r["method"]) in stamps:
                assert r["finished_at"] == stamps[(r["question_id"], r["method"])]

        documents = {M.passage_id(row["uri"]) for row in kb.store.run("ingest/list_documents", {})}
        corpus_ids = {json.loads(x)["id"] for x in Path(f"{dataset}.corpus.jsonl").read_text().splitlines()}
        assert documents == corpus_ids
        questions = {q.id: q for q in load_dataset(dataset).questions}
        for r in records:
            assert r["error"] is None
            # hierarchical (Fig. 11) returns only the chunks above its cosine thresholds, at most depth
            assert len(r["retrieved_chunk_ids"]) == 10 or r["method"] in ("bm25", "hierarchical")
            assert 1 <= len(r["retrieved_chunk_ids"]) <= 10 or r["method"] == "hierarchical"
            # the passage ids are those of the chunks, as the store knows them
            rows = {row["id"]: row for row in kb.store.run("retrieve/chunk_details", {"ids": r["retrieved_chunk_ids"]})}
            assert set(rows) == set(r["retrieved_chunk_ids"])
            assert r["retrieved_passage_ids"] == M.passage_ids(
                rows[c]["document_uri"] for c in r["retrieved_chunk_ids"]
            )
            assert set(r["retrieved_passage_ids"]) <= documents
            gold = questions[r["question_id"]].gold_passage_ids
            assert r["gold_passage_ids"] == gold
            for k in (1, 2, 5, 10):
                hits = len(set(gold) & set(r["retrieved_passage_ids"][:k]))
                assert r["metrics"][f"R@{k}"] == pytest.approx(hits / len(set(gold)))
            assert r["metrics"]["sf_recall"] == pytest.approx(
                len(set(gold) & set(r["retrieved_passage_ids"])) / len(set(gold))
            )

        # the same rankings come back from the KB now (not a stored figure)
        from kbgraph.query.bm25 import BM25Index

        index = BM25Index.open(kb.store, kb.settings)
        assert not index.built  # the eval's index, loaded from disk: the KB did not change
        by_key = {(r["question_id"], r["method"]): r for r in records}
        for qid in list(questions)[:5]:
            q = questions[qid].question
            assert [c.id for c in kb.retrieve(q, k=10, method="dense")] == by_key[(qid, "dense")]["retrieved_chunk_ids"]
            assert [c.id for c in kb.retrieve(q, k=10, method="propagation")] == by_key[(qid, "propagation")][
                "retrieved_chunk_ids"
            ]
            assert [cid for cid, _ in index.search(q, 10)] == by_key[(qid, "bm25")]["retrieved_chunk_ids"]

    summary = json.loads((out / "summary.json").read_text())
    for method in RETRIEVAL:
        recs = [r for r in records if r["method"] == method]
        for k in (1, 2, 5, 10):
            assert summary["methods"][method]["metrics"][f"R@{k}"] == pytest.approx(
                sum(r["metrics"][f"R@{k}"] for r in recs) / len(recs)
            )
    dense, hier = summary["methods"]["dense"]["metrics"], summary["methods"]["propagation"]["metrics"]
    assert dense["R@10"] > 0.5 and hier["R@10"] > 0.5  # 150 passages: most gold passages are found
    assert summary["methods"]["propagation"]["ratios"]["dense"]["R@5"] == pytest.approx(hier["R@5"] / dense["R@5"])
    assert (
        summary["versions"]["bm25s"] and summary["models"]["embedding_model"] == kb_settings.embedding.embedding_model
    )
    report = (out / "report.md").read_text()
    assert "| propagation |" in report and "Ratios to the baselines" in report
    for plot in ("metrics.png", "recall_at_k.png", "latency.png"):
        assert (out / "plots" / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"plots/{plot}" in report

    with KnowledgeBase(settings=kb_settings) as kb, pytest.raises(ConfigError, match="another configuration"):
        evaluate(kb, dataset, methods=["dense"], limit=2, seed=1, sample=5, out=out, llm=None, progress=False)


def test_llm_methods_without_an_llm_are_skipped_with_the_reason(
    kb_settings: Settings, dataset: Path, tmp_path: Path
) -> None:
    with KnowledgeBase(settings=kb_settings) as kb:
        summary = evaluate(
            kb, dataset, methods=["pike", "dense"], limit=2, out=tmp_path, llm=None, ingest=False, progress=False
        )
    assert summary.skipped == {"pike": NO_LLM}
    assert json.loads((tmp_path / "summary.json").read_text())["skipped"] == {"pike": NO_LLM}
    assert {r["method"] for r in _records(tmp_path)} == {"dense"}
    assert "`pike`: no LLM configured" in (tmp_path / "report.md").read_text()


def _scripted(answers: dict[str, str], fail_at: int | None = None) -> ScriptedLLM:
    """Answers each question with its gold answer and judges every answer correct; raises KeyboardInterrupt at
    request ``fail_at`` (1-based) to simulate a user stopping the run."""
    count = {"n": 0}

    def respond(messages: Messages) -> str:
        count["n"] += 1
        if fail_at is not None and count["n"] == fail_at:
            raise KeyboardInterrupt
        if messages[0]["content"] == SYSTEM_JUDGE:
            return "Yes"
        user = messages[-1]["content"]
        answer = next((a for q, a in answers.items() if q in user), "unknown")
        return json.dumps({"answer": answer, "rationale": "scripted"})

    return ScriptedLLM(respond)


def test_llm_plumbing_tokens_judge_and_resume_after_an_interruption(
    kb_settings: Settings, dataset: Path, tmp_path: Path
) -> None:
    questions = load_dataset(dataset).questions[:4]
    answers = {q.question: q.answers[0] for q in questions}
    methods = ["naive", "cot"]  # one answer request and one judge request each
    with KnowledgeBase(settings=kb_settings) as kb:
        llm = _scripted(answers, fail_at=7)  # q1 naive, q1 cot, q2 naive done; q2 cot's answer interrupted
        with pytest.raises(KeyboardInterrupt):
            evaluate(kb, dataset, methods=methods, limit=4, out=tmp_path, llm=llm, ingest=False, progress=False)
        assert [(r["question_id"], r["method"]) for r in _records(tmp_path)] == [
            (questions[0].id, "naive"),
            (questions[0].id, "cot"),
            (questions[1].id, "naive"),
        ]
        llm = _scripted(answers)
        summary = evaluate(kb, dataset, methods=methods, limit=4, out=tmp_path, llm=llm, ingest=False, progress=False)
    assert summary.reused_records == 3 and summary.new_records == 5
    assert len(llm.calls) == 5 * 2  # the finished pairs were not asked again
    records = _records(tmp_path)
    assert len(records) == 8
    for r in records:
        assert r["answer"] == answers[r["question"]]
        assert r["metrics"]["em"] == 1.0 and r["metrics"]["accuracy"] == 1.0 and r["judgement"] == "Yes"
        assert r["tokens"]["calls"] == 1 and r["tokens"]["prompt"] > 0 and r["tokens"]["completion"] > 0
        assert r["judge_tokens"]["calls"] == 1
        if r["method"] == "cot":
            assert r["retrieved_chunk_ids"] == [] and "R@5" not in r["metrics"]
        else:  # naive RAG's context: chunks of the KB, scored over their passages
            assert r["retrieved_chunk_ids"] and r["metrics"]["R@5"] is not None
    naive = summary.methods["naive"]
    assert naive.metrics["accuracy"] == 1.0 and naive.judged == 4
    assert naive.tokens_per_question["total"] > 0
    assert (tmp_path / "plots" / "tokens_per_question.png").is_file()


def test_cli_eval_is_the_library_call(
    kb_settings: Settings,
    dataset: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from kbgraph.cli import main

    for var in (
        "KBGRAPH_LLM_MODEL",
        "KBGRAPH_LLM_BASE_URL",
        "OPENAI_BASE_URL",
        "KBGRAPH_NAME",
        "KBGRAPH_URI",
        "NEO4J_URI",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KBGRAPH_DATA_DIR", str(kb_settings.kb_dir))
    monkeypatch.setenv("KBGRAPH_EMBEDDING_CACHE_DIR", str(kb_settings.embedding.embedding_cache_dir))
    monkeypatch.setenv("KBGRAPH_FALKOR_IDLE_TIMEOUT", "0")
    argv = [
        "--home",
        str(kb_settings.home),
        "--kb",
        kb_settings.name,
        "eval",
        "-d",
        str(dataset),
        "-m",
        "dense,bm25,naive",
        "--limit",
        "3",
        "--out",
        str(tmp_path),
        "--json",
    ]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["kb"]["name"] == kb_settings.name and summary["ingest"]["unchanged"] == 150
    assert summary["skipped"] == {"naive": NO_LLM}
    assert summary["methods"]["dense"]["questions"] == 3 and summary["methods"]["bm25"]["questions"] == 3
    assert main([*argv[:-1], "-m", "nonsense"]) == 2  # a usage error names the methods
    assert "unknown method" in capsys.readouterr().err


def test_cli_rank_train_writes_a_model_that_propagation_uses(
    kb_settings: Settings,
    dataset: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`kbgraph rank train` on the data set's knowledge base: the table has the weighted sum and the fitted model
    on the same pools, the model file loads and names its data set, and propagation ranks with it."""
    from kbgraph.cli import main
    from kbgraph.query.context import QueryContext
    from kbgraph.query.propagation.ranking_learned import load_model
    from kbgraph.query.methods.retrieval import retrieve_propagation

    for var in (
        "KBGRAPH_LLM_MODEL",
        "KBGRAPH_LLM_BASE_URL",
        "OPENAI_BASE_URL",
        "KBGRAPH_NAME",
        "KBGRAPH_URI",
        "NEO4J_URI",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KBGRAPH_DATA_DIR", str(kb_settings.kb_dir))
    monkeypatch.setenv("KBGRAPH_EMBEDDING_CACHE_DIR", str(kb_settings.embedding.embedding_cache_dir))
    monkeypatch.setenv("KBGRAPH_FALKOR_IDLE_TIMEOUT", "0")
    out = tmp_path / "ranker.json"
    argv = [
        "--home",
        str(kb_settings.home),
        "--kb",
        kb_settings.name,
        "rank",
        "train",
        "-d",
        str(dataset),
        "--out",
        str(out),
        "--no-ingest",
        "--json",
    ]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    (name,) = report["recall"]
    row = report["recall"][name]
    assert set(row) == {"weights", "in_set"}  # one data set: no leave-one-set-out
    model = load_model(out)
    assert model.trained_on == [name] and model.pool == kb_settings.retrieval.ranker_pool
    # the weights row is the weighted sum's own ranking, as kbgraph eval's propagation with ranker=weights gives it
    questions = load_dataset(dataset).questions
    with KnowledgeBase(settings=kb_settings.updated({"ranker": "weights"})) as kb:
        ctx = QueryContext(kb.store, kb.settings, kb.embedder, None)
        r5 = [
            M.recall_at_k(
                M.passage_ids(c.document_uri for c in retrieve_propagation(q.question, ctx, k=10)),
                q.gold_passage_ids,
                5,
            )
            for q in questions
        ]
    assert row["weights"]["R@5"] == pytest.approx(100 * sum(r5) / len(r5), abs=1e-6)  # type: ignore[arg-type]
    # propagation with that model: the scores are the model's (not the weighted sums)
    with KnowledgeBase(settings=kb_settings.updated({"ranker": "learned", "ranker_model": out})) as kb:
        ctx = QueryContext(kb.store, kb.settings, kb.embedder, None)
        chunks = retrieve_propagation(questions[0].question, ctx, k=5, explain=True)
        assert chunks and all(c.ranking for c in chunks)
        assert chunks[0].score == pytest.approx(model.intercept + sum(r.contribution for r in chunks[0].ranking))
    assert main([*argv[:-1], "-d", str(dataset)]) == 2  # --kb with two data sets: a usage error
    assert "--kb" in capsys.readouterr().err


# --- BM25 over the store's chunks, on both backends --------------------------------------------------------
def _passage_graph(pid: str, title: str, texts: list[str]) -> DocumentGraph:
    import numpy as np

    from kbgraph.models import ChunkRecord, DocumentGraph, DocumentRecord

    def vec(seed: str) -> list[float]:
        v = np.random.default_rng(abs(hash(seed)) % 2**32).normal(size=384)
        out: list[float] = (v / np.linalg.norm(v)).tolist()
        return out

    doc_id = f"doc:{pid}"
    doc = DocumentRecord(
        id=doc_id,
        uri=f"file:///corpus.jsonl#{pid}",
        title=title,
        mime="application/x-ndjson",
        sha256=f"sha-{title}-{'|'.join(texts)}",
        embedding=vec(doc_id),
    )
    chunks = [
        ChunkRecord(
            id=f"chunk:{pid}:{i}", document_id=doc_id, parent_id=doc_id, text=t, order=i, embedding=vec(f"{pid}{i}")
        )
        for i, t in enumerate(texts)
    ]
    return DocumentGraph(document=doc, chunks=chunks)


def test_bm25_index_reads_the_store_ranks_and_rebuilds_when_the_kb_changes(
    store: GraphStore, backend_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbgraph.ingest.write import write_documents
    from kbgraph.query import bm25

    monkeypatch.setattr(bm25, "PAGE", 2)  # several pages of chunk keys and texts
    write_documents(
        store,
        [
            _passage_graph("p1", "Adolescence", ["G. Stanley Hall wrote Adolescence in 1904.", "It has two volumes."]),
            _passage_graph(
                "p2",
                "American Psychological Association",
                ["The American Psychological Association publishes psychology journals."],
            ),
            _passage_graph("p3", "Cork", ["Cork is a city in Ireland on the River Lee."]),
        ],
    )
    root = tmp_path / "bm25"
    index = bm25.BM25Index.open(store, backend_settings, root=root)
    assert index.built and len(index) == 4 and index.stemmer == "snowball-english"
    assert sorted(index.ids) == ["chunk:p1:0", "chunk:p1:1", "chunk:p2:0", "chunk:p3:0"]
    hits = index.search("Which association publishes journals of psychologists?", 10)
    assert [cid for cid, _ in hits] == ["chunk:p2:0"]  # stemming: publishes/publish, journals/journal; no other match
    top = index.retrieve(store, "city on the river Lee", 3)
    assert top[0].id == "chunk:p3:0" and top[0].document_uri.endswith("#p3") and top[0].document_title == "Cork"
    by_title = index.search("adolescence", 10)  # the title is indexed with every chunk of its document
    assert {cid for cid, _ in by_title} == {"chunk:p1:0", "chunk:p1:1"}
    assert index.search("the of and", 5) == []  # stop words only

    again = bm25.BM25Index.open(store, backend_settings, root=root)
    assert not again.built and again.fingerprint == index.fingerprint
    assert again.search("city on the river Lee", 3) == index.search("city on the river Lee", 3)

    write_documents(store, [_passage_graph("p4", "Lee", ["The River Lee flows through Cork city."])])
    changed = bm25.BM25Index.open(store, backend_settings, root=root)
    assert changed.built and changed.fingerprint != index.fingerprint and len(changed) == 5
    assert {cid for cid, _ in changed.search("river Lee", 5)} == {"chunk:p3:0", "chunk:p4:0"}
    assert [p.name for p in root.iterdir()] == [changed.fingerprint[:16]]  # the stale index was removed
    store.delete_document("doc:p4")
    assert bm25.BM25Index.open(store, backend_settings, root=root).fingerprint == index.fingerprint


def test_shared_bm25_index_is_reused_until_the_corpus_changes(
    store: GraphStore, backend_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The learned ranker's BM25 index (kbgraph.query.bm25.shared_index): one object per knowledge base while
    the corpus generation holds; a new document or a deletion is searched at once; a new process loads the
    saved index by its generation without the fingerprint pass over every chunk."""
    from kbgraph.ingest.write import write_documents
    from kbgraph.query import bm25

    settings = backend_settings.updated({"home": tmp_path})
    write_documents(
        store,
        [
            _passage_graph("p1", "Adolescence", ["G. Stanley Hall wrote Adolescence in 1904."]),
            _passage_graph("p2", "Cork", ["Cork is a city in Ireland on the River Lee."]),
        ],
    )
    first = bm25.shared_index(store, settings)
    assert bm25.shared_index(store, settings) is first
    assert first.search("zanzibar spices", 5) == []
    write_documents(store, [_passage_graph("p3", "Zanzibar", ["Zanzibar exports cloves and other spices."])])
    second = bm25.shared_index(store, settings)
    assert second is not first and [cid for cid, _ in second.search("zanzibar spices", 5)] == ["chunk:p3:0"]
    store.delete_document("doc:p3")
    assert bm25.shared_index(store, settings).search("zanzibar spices", 5) == []

    bm25._SHARED.clear()  # as a new process: the saved index of this generation, no fingerprint
    monkeypatch.setattr(bm25, "corpus_fingerprint", lambda *a, **k: pytest.fail("fingerprint computed"))
    again = bm25.shared_index(store, settings)
    assert sorted(again.ids) == ["chunk:p1:0", "chunk:p2:0"] and not again.built


def test_an_ingestion_that_changes_the_corpus_builds_the_bm25_index(
    backend_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an ingestion that adds, updates or deletes documents the learned ranker's BM25 index and the entity
    names' index (the Entity.name seeds, with ``entity_fulltext='bm25'``) are already built (the first question does not pay for them); a run that
    changes nothing builds nothing."""
    from kbgraph.kb import KnowledgeBase
    from kbgraph.query import bm25

    settings = backend_settings.updated({"home": tmp_path / "home", "entity_fulltext": "bm25"})
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "cork.txt").write_text("Cork is a city in Ireland on the River Lee.\n", encoding="utf-8")
    (docs / "zanzibar.txt").write_text("Zanzibar exports cloves and other spices.\n", encoding="utf-8")
    opened: list[str] = []  # the corpus of each open
    real_open = bm25.BM25Index.open.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        bm25.BM25Index,
        "open",
        classmethod(
            lambda cls, *a, **k: opened.append(k.get("corpus", bm25.CHUNKS).texts) or real_open(cls, *a, **k)  # type: ignore[func-returns-value]
        ),
    )
    built = ["retrieve/chunk_texts", "retrieve/entity_names"]
    with KnowledgeBase(settings=settings) as kb:
        kb.reset()
        assert kb.ingest([docs], progress=False).added == 2
        assert opened == built
        index = bm25.shared_index(kb.store, kb.settings)
        names = bm25.shared_index(kb.store, kb.settings, corpus=bm25.ENTITY_NAMES)
        assert opened == built and [cid for cid, _ in index.search("cloves", 5)] != []  # no build at the question
        assert [names.text(eid) for eid, _ in names.top("Where is Cork?", 3)] == ["Cork"]
        assert kb.ingest([docs], progress=False).unchanged == 2 and opened == built
        kb.reset()
