"""Training data for a knowledge-aware decomposer (PIKE-RAG §5.3.3, §6.4): Algorithm 2's bookkeeping
(kbgraph.eval.decomposer_data), Algorithm 3's SFT pairs (kbgraph.eval.decomposer_sft), the learned proposer in
Algorithm 1 (kbgraph.query.methods.decomposer_learned) and ``kbgraph decomposer collect | sft``.

The graph is test_decompose.py's: 30 MuSiQue passages with one atomic tag per sentence and real embeddings, on an
embedded FalkorDB graph of this module (its fixtures are imported, not copied). A scripted LLM reads the prompts.
Every retrieval list, S and V update and UCB choice is recomputed here from ``store.vector_search`` and the
embedder, independently of the module's code.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from kbgraph.embed.base import Embedder
from kbgraph.errors import ConfigError
from kbgraph.eval.dataset import EvalQuestion
from kbgraph.llm.base import Messages
from kbgraph.llm.fake import ScriptedLLM
from kbgraph.models import DocumentGraph
from kbgraph.query.context import QueryContext
from kbgraph.query.methods.decompose import answer_pike
from kbgraph.eval.decomposer_data import Trajectory, collect_trajectories
from kbgraph.eval.decomposer_sft import read_trajectories, sft_pairs, write_sft
from kbgraph.query.models import TraceRound
from kbgraph.settings import Settings
from kbgraph.store.base import GraphStore
from tests.llm_server_fixture import LLMServerInfo
from tests.test_decompose import EXTRA_QUESTIONS, HOP1, HOP2, KB, Q_ID, corpus, graphs, kb
from tests.traces import trace_of

FIXTURES = (corpus, graphs, kb)  # test_decompose.py's graph, built again for this module
ANSWER = "G. Stanley Hall"
ROUNDS = [
    [HOP1, "Who founded the Journal of Psychotherapy Integration?"],
    [HOP2, "Where is the American Psychological Association based?"],
    ["When was G. Stanley Hall born?"],
]
K, K_PRIME, DELTA, DELTA_PRIME, ALPHA = 2, 6, 0.5, 0.2, 0.7


class Responder:
    """Answers each prompt by its kind: proposals per proposer call (cycling over ``rounds``), selector index 1,
    the final answer, the judge's 'Yes', the learned proposer's scripted replies. Records (kind, user text)."""

    def __init__(self, rounds: list[list[str]] = ROUNDS, answer: str = ANSWER, learned: Iterable[str] = ()) -> None:
        self.rounds, self.answer, self.learned = rounds, answer, list(learned)
        self.seen: list[tuple[str, str]] = []
        self.proposed = 0

    def __call__(self, messages: Messages) -> str:
        text = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        kind = (
            "propose"
            if "raise atomic sub-questions" in text
            else "select"
            if "# Sub-Questions You Can Choose From" in text
            else "answer"
            if "answer a question referring to a given context" in text
            else "judge"
            if "Is the answer correct or not?" in text
            else "learned"
            if "determine whether a follow-up question is necessary" in text
            else "?"
        )
        self.seen.append((kind, text))
        if kind == "propose":
            subs = self.rounds[self.proposed % len(self.rounds)]
            self.proposed += 1
            return json.dumps({"thinking": "t", "sub_questions": subs})
        if kind == "select":
            return json.dumps({"thinking": "s", "question_idx": 1})
        if kind == "answer":
            return json.dumps({"answer": self.answer, "rationale": "r"})
        if kind == "judge":
            return "Yes" if self.answer == ANSWER else "No"
        if kind == "learned":
            return self.learned.pop(0)
        raise AssertionError(text[:200])


def _settings(settings: Settings, **extra: Any) -> Settings:
    return settings.updated({"decompose_candidates": K, "decompose_threshold": DELTA, **extra})


def _question(corpus: dict[str, Any]) -> EvalQuestion:
    q = corpus["question"]
    return EvalQuestion(id=q["id"], question=q["question"], answers=q["answers"])


# --- an independent Algorithm 2 bookkeeper ----------------------------------------------------------------------
def expected_round(
    store: GraphStore, embedder: Embedder, proposals: list[str], *, known: Iterable[str] = ()
) -> tuple[list[tuple[str, str, float]], list[str], dict[str, float]]:
    """(AC_t as (question id, chunk id, score) per hit, RAP_t question ids, S increments per chunk)."""
    pvecs = np.asarray(embedder.embed(proposals))
    hits: list[list[tuple[str, str, float]]] = []
    text_of: dict[str, str] = {}
    for vec in pvecs:
        found = [h for h in store.vector_search("AtomicQuestion", vec.tolist(), k=K_PRIME) if h.score >= DELTA_PRIME]
        rows = store.run("retrieve/chunks_of_questions", {"ids": [h.id for h in found]}) if found else []
        chunk_of = {r["via"]: r["chunk_id"] for r in rows}
        hits.append([(h.id, chunk_of[h.id], h.score) for h in found])
        text_of.update({h.id: h.properties["text"] for h in found})
    chunk = {q: c for lst in hits for q, c, _ in lst}
    relevant: list[str] = []
    for lst in hits:  # line 10 with the top-K of each proposal
        relevant += [q for q, _c, s in lst[:K] if s >= DELTA and q not in relevant]
    updates: dict[str, float] = {}
    for q in dict.fromkeys(q for lst in hits for q, _, _ in lst):
        if q not in relevant:  # line 13: the max over all proposals of the cosine with q's stored vector, which on
            # this hand-built graph is the embedding of q's text (late chunking: test_line_13_reads_line_10s_vectors)
            best = float(max(np.asarray(embedder.embed([text_of[q]]))[0] @ pvecs.T))
            updates[chunk[q]] = updates.get(chunk[q], 0.0) + best
    rap = [q for q in relevant if chunk[q] not in set(known)]
    return [x for lst in hits for x in lst], rap, updates


def check_trajectories(trajs: list[Trajectory], store: GraphStore, embedder: Embedder, responder: Responder) -> None:
    """Replays S and V (shared by a question's trajectories) round by round and checks every step."""
    S: dict[str, float] = {}
    V: dict[str, int] = {}
    proposer_prompts = iter(t for k, t in responder.seen if k == "propose")
    selector_prompts = iter(t for k, t in responder.seen if k == "select")
    exercised = {"split": 0, "sampled": 0}
    for traj in trajs:
        context: list[str] = []
        for step in traj.steps:
            t, prompt = step.round, next(proposer_prompts)
            if not S:  # line 5: empty pool
                assert step.sampled is None
            else:
                assert step.sampled is not None
                values = {c: S[c] + ALPHA * math.sqrt(math.log(t) / V.get(c, 1)) for c in S}
                best = max(values, key=values.__getitem__)
                assert step.sampled.chunk_id == best and step.sampled.ucb == pytest.approx(values[best], abs=1e-9)
                assert step.sampled.values == pytest.approx(values, abs=1e-9)
                assert step.sampled.score == pytest.approx(S[best], abs=1e-9) and step.sampled.visits == V.get(best, 1)
                assert step.sampled.in_context == (best in context)
                text = store.run("retrieve/chunk_details", {"ids": [best]})[0]["text"]
                assert text in prompt  # line 6: the proposer sees C_{t-1} ∪ {c_sampled}
                exercised["sampled"] += best not in context
            ac, rap, updates = expected_round(store, embedder, step.proposals, known=context)
            assert [(c.question_id, c.chunk_id) for c in step.candidates] == [(q, c) for q, c, _ in ac]
            assert np.allclose([c.score for c in step.candidates], [s for *_, s in ac], atol=1e-5)
            assert [c.question_id for c in step.relevant] == rap
            assert step.score_updates.keys() == updates.keys()
            bad = {c: (step.score_updates[c], v) for c, v in updates.items() if abs(step.score_updates[c] - v) >= 1e-4}
            assert not bad, bad
            exercised["split"] += bool(updates) and bool(rap)
            for c in updates:  # replayed with the checked increments, so the UCB values below compare exactly
                S[c] = S.get(c, 0.0) + step.score_updates[c]
            if step.chunk_id:  # lines 21-24; the selector saw exactly RAP_t and the context without the sample
                prompt = next(selector_prompts)
                listed = [f"Question {i}: {c.text}" in prompt for i, c in enumerate(step.relevant, 1)]
                assert listed == [True] * len(rap)
                assert step.chunk_id == step.relevant[0].chunk_id
                context.append(step.chunk_id)
                S[step.chunk_id], V[step.chunk_id] = 0.0, V.get(step.chunk_id, 1) + 1
        assert [c.chunk_id for c in traj.context] == context
        assert traj.pool_scores == pytest.approx(S, abs=1e-9) and traj.pool_visits == V
    assert exercised["split"] and exercised["sampled"], exercised


# --- tests ------------------------------------------------------------------------------------------------------
def test_algorithm2_bookkeeping(kb: KB, corpus: dict[str, Any]) -> None:
    store, settings, embedder = kb
    responder = Responder()
    llm = ScriptedLLM(responder)
    ctx = QueryContext(store, _settings(settings), embedder, llm)
    trajs = list(
        collect_trajectories(
            ctx,
            [_question(corpus)],
            alpha=ALPHA,
            k_prime=K_PRIME,
            delta_prime=DELTA_PRIME,
            rounds=3,
            samples=2,
            until_correct=False,
            judge=True,
        )
    )
    assert [t.sample for t in trajs] == [1, 2] and all(len(t.steps) == 3 for t in trajs)
    check_trajectories(trajs, store, embedder, responder)
    # trajectory 2 starts from the pool trajectory 1 left: at t = 1, ln t = 0 and the best S is sampled
    first = trajs[1].steps[0].sampled
    assert first is not None and first.score == max(trajs[0].pool_scores.values())
    for t in trajs:  # line 27 and the score: F1 against the gold labels, and the judge
        assert t.answer == ANSWER and t.scores.f1 == 1.0 and t.accuracy == 1.0 and t.score == 1.0 and t.correct
        assert t.params == {
            "alpha": ALPHA,
            "k": K,
            "k_prime": K_PRIME,
            "delta": DELTA,
            "delta_prime": DELTA_PRIME,
            "rounds": 3,
        }
    assert [k for k, _ in responder.seen].count("judge") == 2
    assert Trajectory.model_validate_json(trajs[0].model_dump_json()) == trajs[0]


@pytest.mark.slow  # ingests 30 passages with the real pipeline
def test_line_13_reads_line_10s_vectors_on_a_late_chunked_kb(
    falkor_settings: Settings, examples_dir: Path, tmp_path: Path
) -> None:
    """Late chunking (the default) stores each sentence tag's in-context vector: line 13's S increment must be the
    cosine with that stored vector (what line 10 compares through the index), not with a fresh embedding of the
    tag's text alone, which differs on such a knowledge base."""
    import uuid

    from kbgraph.eval.decomposer_data import split_candidates
    from kbgraph.kb import KnowledgeBase
    from kbgraph.query.graph import retrieve_atomic
    from tests.musique_sample import musique_sample

    path, questions = musique_sample(examples_dir, tmp_path, passages=30, questions=3)
    settings = falkor_settings.updated({"name": f"late{uuid.uuid4().hex[:8]}"})
    assert settings.embedding.late_chunking
    with KnowledgeBase(settings=settings) as kb:
        assert kb.ingest([path], progress=False).failed == 0
        ctx = QueryContext(kb.store, kb.settings, kb.embedder, None)
        proposals = questions[:2]
        vectors = np.asarray(kb.embedder.embed(proposals))
        hits = retrieve_atomic(kb.store, proposals, vectors, k=8, threshold=0.0)
        relevant, updates = split_candidates(ctx, proposals, vectors, hits, k=1, delta=0.99)  # line 10 keeps none
        assert relevant == [] and updates
        index = [{h.id: h.score for h in kb.store.vector_search("AtomicQuestion", v.tolist(), k=1000)} for v in vectors]
        expected: dict[str, float] = {}
        fresh: dict[str, float] = {}
        texts = {c.question_id: c.text for c in hits}
        for qid, cid in {c.question_id: c.chunk_id for c in hits}.items():
            expected[cid] = expected.get(cid, 0.0) + max(scores[qid] for scores in index)
            own = float(max(np.asarray(kb.embedder.embed([texts[qid]]))[0] @ vectors.T))
            fresh[cid] = fresh.get(cid, 0.0) + own
        assert updates.keys() == expected.keys()
        for cid, value in updates.items():
            assert value == pytest.approx(expected[cid], abs=1e-4)
        # the knowledge base is late-chunked: the text's own embedding is another space
        assert max(abs(fresh[c] - expected[c]) for c in expected) > 1e-2
        kb.reset()


def test_until_correct_and_the_parameter_checks(kb: KB, corpus: dict[str, Any]) -> None:
    store, settings, embedder = kb
    q = _question(corpus)
    for answer, n in ((ANSWER, 1), ("Paris", 3)):
        llm = ScriptedLLM(Responder(answer=answer))
        ctx = QueryContext(store, _settings(settings, decomposer_samples=3), embedder, llm)
        trajs = list(collect_trajectories(ctx, [q], rounds=1))
        assert len(trajs) == n and trajs[-1].correct == (answer == ANSWER)
        last = trajs[-1]
        assert last.score == last.scores.f1 == (1.0 if answer == ANSWER else 0.0) and last.accuracy is None
    ctx = QueryContext(store, _settings(settings), embedder, ScriptedLLM(Responder()))
    with pytest.raises(ConfigError, match="K'"):
        list(collect_trajectories(ctx, [q], k_prime=K - 1))
    with pytest.raises(ConfigError, match="δ'"):
        list(collect_trajectories(ctx, [q], delta_prime=DELTA + 0.1))
    with pytest.raises(ConfigError, match="needs an LLM"):
        list(collect_trajectories(QueryContext(store, settings, embedder, None), [q]))


def test_sft_pairs_match_the_trajectories(kb: KB, corpus: dict[str, Any], tmp_path: Path) -> None:
    store, settings, embedder = kb
    ctx = QueryContext(store, _settings(settings), embedder, ScriptedLLM(Responder()))
    trajs = list(
        collect_trajectories(
            ctx, [_question(corpus)], k_prime=K_PRIME, delta_prime=DELTA_PRIME, rounds=3, samples=2, until_correct=False
        )
    )
    trajs[1].score = 0.4  # below the default min score: left out
    path = tmp_path / "trajectories.jsonl"
    path.write_text("".join(t.model_dump_json() + "\n" for t in trajs) + '{"cut short', encoding="utf-8")
    assert [t.model_dump() for t in read_trajectories(tmp_path)] == [t.model_dump() for t in trajs]
    report = write_sft(tmp_path, tmp_path / "sft.jsonl", min_score=1.0)
    lines = [json.loads(x) for x in (tmp_path / "sft.jsonl").read_text().splitlines()]
    traj = trajs[0]
    subs = [(s.selected.text, s.chunk_id) for s in traj.steps if s.chunk_id]  # type: ignore[union-attr]
    assert len(subs) >= 2 and report.kept == 1 and report.trajectories == 2
    assert len(lines) == report.pairs == len(subs) + 1
    chunk_text = {c.chunk_id: c.text for c in traj.context}
    for i, rec in enumerate(lines):  # Algorithm 3: x_i holds (q^1, a^1) .. (q^{i-1}, a^{i-1}); y_i names q^i
        roles = [m["role"] for m in rec["messages"]]
        assert roles == ["system", "user", "assistant"]
        user, assistant = rec["messages"][1]["content"], rec["messages"][2]["content"]
        assert f"Original Question\n{traj.question}\n" in user
        for j, (sub, cid) in enumerate(subs, start=1):
            assert (f"Sub-question {j}: {sub}" in user) == (j <= i) and (chunk_text[cid] in user) == (j <= i)
        if i < len(subs):
            assert assistant == f"<decompose>True</decompose>\n<sub-question>{subs[i][0]}</sub-question>"
        else:
            assert assistant == "<decompose>False</decompose>" and "Existing Context\nSub-question 1" in user
    assert "Existing Context\nNone\n" in lines[0]["messages"][1]["content"]
    # min-score 0 keeps both; their shared first pairs are written once
    report = write_sft(path, tmp_path / "all.jsonl", min_score=0.0)
    n_pairs = sum(len(sft_pairs(t)) for t in trajs)
    assert report.kept == 2 and report.pairs + report.duplicates == n_pairs and report.duplicates >= 1
    # the CLI verb over the same folder
    from kbgraph.cli import app

    out = CliRunner().invoke(
        app,
        [
            "decomposer",
            "sft",
            "--in",
            str(tmp_path),
            "--out",
            str(tmp_path / "c.jsonl"),
            "--min-score",
            "0.5",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["pairs"] == len(subs) + 1
    assert (tmp_path / "c.jsonl").read_text() == (tmp_path / "sft.jsonl").read_text()


def test_learned_proposer_is_one_call_per_round(kb: KB, corpus: dict[str, Any]) -> None:
    store, settings, embedder = kb
    question = corpus["question"]["question"]
    replies = [
        f"<decompose>True</decompose>\n<sub-question>{HOP1}</sub-question>",
        f"<decompose>True</decompose>\n<sub-question>{HOP2}</sub-question>",
        "<decompose>False</decompose>",
    ]
    responder = Responder(learned=replies)
    llm = ScriptedLLM(responder)
    s = _settings(settings, decomposer_model="kb-decomposer-ft")
    answer = answer_pike(question, QueryContext(store, s, embedder, llm))
    assert [k for k, _ in responder.seen] == ["learned", "learned", "learned", "answer"]
    assert [r["model"] for r in llm.requests] == ["kb-decomposer-ft"] * 3 + ["scripted"]
    assert [r.selection for r in trace_of(answer, TraceRound)] == ["learned"] * 3
    assert (
        "kb-decomposer-ft" in trace_of(answer, TraceRound)[0].note
        and "needs no further" in trace_of(answer, TraceRound)[2].note
    )
    context = []
    for rnd, sub in zip(
        trace_of(answer, TraceRound)[:2], (HOP1, HOP2), strict=True
    ):  # c^t: the nearest atomic question's chunk
        want = [
            h for h in store.vector_search("AtomicQuestion", embedder.embed([sub])[0].tolist(), k=K) if h.score >= DELTA
        ]
        found = store.run("retrieve/chunks_of_questions", {"ids": [h.id for h in want]})
        rows = {r["via"]: r["chunk_id"] for r in found}
        want = [h for h in want if rows[h.id] not in context]
        assert rnd.proposals == [sub] and rnd.selected.question_id == want[0].id and rnd.chunk_id == rows[want[0].id]  # type: ignore[union-attr]
        context.append(rnd.chunk_id)
    assert [c.chunk_id for c in answer.citations] == context
    # each request is the SFT x_i of the same decomposition, so a model trained on the pairs sees its format
    traj = Trajectory(question_id="q", question=question, steps=[], context=[])
    from kbgraph.eval.decomposer_data import ContextChunk, TrajectoryStep

    for rnd, c in zip(trace_of(answer, TraceRound)[:2], answer.chunks, strict=True):
        traj.steps.append(TrajectoryStep(round=rnd.round, selected=rnd.selected, chunk_id=rnd.chunk_id))
        traj.context.append(ContextChunk(chunk_id=c.id, title=c.document_title, text=c.text))
    assert [x for k, x in responder.seen if k == "learned"] == [p.x for p in sft_pairs(traj)]


def test_collect_verb_resumes_and_refuses_another_run(
    kb: KB, corpus: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kbgraph decomposer collect`` with the scripted LLM (the real server's run is below): written, resumed,
    refused for another configuration or a foreign folder."""
    from kbgraph.kb import KnowledgeBase
    from kbgraph.eval.decomposer_run import collect_dataset

    store, settings, embedder = kb
    data = tmp_path / "mq.questions.jsonl"
    data.write_text(json.dumps(corpus["question"]) + "\n" + json.dumps({**corpus["question"], "id": "b"}) + "\n")
    kbase = KnowledgeBase(settings=_settings(settings, decomposer_rounds=1, decomposer_samples=1))
    kbase.llm = ScriptedLLM(Responder())
    out = tmp_path / "run"
    first = collect_dataset(kbase, data, out, limit=1, judge=False)
    kbase.close()
    assert first.new_questions == 1 and first.trajectories == 1 and first.scores.histogram["1"] == 1
    second = collect_dataset(kbase, data, out, judge=False)
    assert (second.new_questions, second.reused_questions, second.trajectories) == (1, 1, 2)
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == 2
    assert json.loads((out / "summary.json").read_text())["correct_questions"] == 2
    with pytest.raises(ConfigError, match="another configuration.*rounds"):
        collect_dataset(kbase, data, out, judge=False, rounds=2)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.txt").write_text("x")
    with pytest.raises(ConfigError, match="not empty"):
        collect_dataset(kbase, data, tmp_path / "other", judge=False)


# --- Neo4j ------------------------------------------------------------------------------------------------------
@pytest.mark.neo4j
@pytest.mark.slow
@pytest.mark.parametrize("backend_settings", ["neo4j"], indirect=True)
def test_algorithm2_on_neo4j(
    store: GraphStore, backend_settings: Settings, graphs: tuple[list[DocumentGraph], Embedder], corpus: dict[str, Any]
) -> None:
    from kbgraph.ingest.write import write_documents

    write_documents(store, graphs[0])
    embedder = graphs[1]
    responder = Responder()
    ctx = QueryContext(store, _settings(backend_settings), embedder, ScriptedLLM(responder))
    trajs = list(
        collect_trajectories(
            ctx,
            [_question(corpus)],
            alpha=ALPHA,
            k_prime=K_PRIME,
            delta_prime=DELTA_PRIME,
            rounds=3,
            samples=2,
            until_correct=False,
        )
    )
    check_trajectories(trajs, store, embedder, responder)


# --- the real local LLM --------------------------------------------------------------------------------------------
def test_collect_with_the_real_llm(
    kb: KB, corpus: dict[str, Any], llm_server: LLMServerInfo, tmp_path: Path, examples_dir: Path
) -> None:
    """``kbgraph decomposer collect`` on 2 questions against llama.cpp's server (SmolLM2-135M): the run completes
    and every trajectory is written with its steps and score (a 135M model's answers are not under test)."""
    from kbgraph.cli import app

    store, settings, _ = kb
    questions = {
        q["id"]: q
        for q in map(json.loads, (examples_dir / "multihop" / "musique" / "hipporag_train100.questions.jsonl").open())
    }
    data = tmp_path / "two.questions.jsonl"
    data.write_text("".join(json.dumps(questions[i]) + "\n" for i in (Q_ID, EXTRA_QUESTIONS[0])))
    env = {
        "KBGRAPH_DATA_DIR": str(settings.store.data_dir),
        "KBGRAPH_FALKOR_IDLE_TIMEOUT": "0",
        "KBGRAPH_EMBEDDING_CACHE_DIR": str(settings.embedding.embedding_cache_dir),
        "KBGRAPH_LLM_BASE_URL": llm_server.base_url,
        "KBGRAPH_LLM_MODEL": llm_server.model,
        "KBGRAPH_LLM_API_KEY": SecretStr("none").get_secret_value(),
        "KBGRAPH_LLM_TIMEOUT": "300",
        "KBGRAPH_LLM_MAX_TOKENS": "200",
        "KBGRAPH_LLM_CACHE_DIR": str(tmp_path / "cache"),
        "KBGRAPH_DECOMPOSER_ROUNDS": "2",
        "KBGRAPH_DECOMPOSE_THRESHOLD": "0.4",
    }
    args = [
        "--home",
        str(settings.home),
        "--kb",
        settings.name,
        "decomposer",
        "collect",
        "--dataset",
        str(data),
        "--out",
        str(tmp_path / "run"),
        "--limit",
        "2",
        "--samples",
        "1",
        "--no-ingest",
        "--json",
    ]
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    trajs = list(read_trajectories(tmp_path / "run"))
    assert summary["questions_done"] == 2 and summary["trajectories"] == len(trajs) == 2
    assert [t.question_id for t in trajs] == [Q_ID, EXTRA_QUESTIONS[0]]
    assert summary["usage"]["calls"] + summary["usage"]["cached_calls"] > 0
    for t in trajs:
        assert 1 <= len(t.steps) <= 2 and 0.0 <= t.score <= 1.0 and t.params["rounds"] == 2
        assert all(c.score >= t.params["delta_prime"] - 1e-6 for s in t.steps for c in s.candidates)
        assert t.judgement or t.accuracy is None
    assert sum(summary["scores"]["histogram"].values()) == 2
