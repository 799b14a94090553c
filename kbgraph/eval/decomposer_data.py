"""Data to train a knowledge-aware decomposer: PIKE-RAG §5.3.3 Algorithm 2 "Collect Data to Train a
Knowledge-Aware Decomposer" (paper 000; Fig. 12), with the answer scored against the gold labels (§6.4).

    C_0 = ∅                                                          line 1
    S = {c: 0 ∀c}, V = {c: 1 ∀c}                                     lines 2-3  (:class:`ContextPool`)
    for t = 1..N:                                                    line 4, N = settings.decomposer.decomposer_rounds
        c_sampled = argmax_c S(c) + α sqrt(ln t / V(c))              line 5, α = settings.decomposer.decomposer_alpha
        proposals <- LLM(q, C_{t-1} ∪ {c_sampled})                   line 6, prompts.PROPOSER
        AC_t <- per proposal, top-K' atomic questions, sim >= δ'     line 7, K' = decomposer_k_prime, δ'
        for (q, c) in AC_t:                                          lines 8-15
            if ∃ proposal: sim(q, proposal) >= δ  ->  RAP_t
            else  S(c) += max over proposals of sim(q, proposal)
        q^t <- LLM(q, C_{t-1}, RAP_t)  or None -> break              lines 16-19, prompts.SELECTOR
        C_t <- C_{t-1} ∪ {c^t};  S(c^t) = 0;  V(c^t) += 1            lines 21-24
    answer <- LLM(q, C_t)                                            line 27, prompts.ANSWER

Readings of the paper where its lines leave a choice (each named where it is coded):

* The sampling pool. ``S = {c: 0 ∀c}`` makes every chunk of the knowledge base a key, but the text samples
  "additional chunks from S when available" and Fig. 12 draws a "context sampling pool": the pool is the chunks
  S has a record for (written by line 13 or line 23). With an empty pool (always at t = 1 of a question's first
  trajectory) nothing is sampled. Ties of the UCB value go to the chunk recorded first. A sampled chunk already in
  C_{t-1} is kept as line 5 chose it (the union adds nothing; ``SampledChunk.in_context``).
* Top-K. Line 10 tests ``sim >= δ``; the text adds that the chunks of "the top-K most relevant atomic retrieved
  pairs" go on to selection and "those retrieved chunks that do not make it into the top-K selection" into S. A
  pair is relevant when it is among the first K of some proposal's K' list with similarity >= δ, i.e. exactly
  Algorithm 1's candidates (kbgraph.query.methods.decompose); every other pair of AC_t updates S (line 13).
* Line 7 and line 10 read the vector index's cosine (as Algorithm 1); line 13's max over all proposals (most of
  which did not retrieve q) is the exact cosine of each proposal's vector and q's *stored* vector, computed in
  the database (``retrieve/atomic_question_similarity``): the vector the index holds, so lines 10 and 13 compare
  in one space. With late chunking (the default) a sentence tag's stored vector is its in-context vector, which
  an embedding of its text alone is not. Neo4j's index scores are quantized, ~1e-2 off the exact cosine.
* As in Algorithm 1 (authors' code), RAP_t never offers a chunk already in C_{t-1} to the selector; S's
  bookkeeping (lines 9-15) is as written, for every pair. An empty RAP_t is q^t = None without asking the LLM;
  Algorithm 1's backup retrievals and backup selection are not part of Algorithm 2.
* Several trajectories per question (§6.4: trajectories are generated "until we successfully obtain a
  decomposition trajectory that leads to the correct answer"): lines 2-3 run once per question and its
  trajectories share S and V, so each trajectory's samples explore what the earlier ones left (with a
  deterministic LLM, trajectories differ only through the sampled context); lines 1 and 4-27 run per trajectory.
  One trajectory per question (``samples=1``) is Algorithm 2 exactly.

Score (§6.4, Fig. 12 d): token F1 against the gold labels (kbgraph.eval.metrics) and, with ``judge``, the LLM
judge's accuracy (prompts.JUDGE, as ``kbgraph eval``); ``Trajectory.score`` is the accuracy when judged, else F1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from kbgraph.errors import ConfigError, LLMError
from kbgraph.eval.dataset import EvalQuestion
from kbgraph.query import prompts
from kbgraph.query.answering import UsageMeter, context_of, final_answer
from kbgraph.query.context import QueryContext
from kbgraph.query.methods.decompose import Selection, propose
from kbgraph.query.graph import chunk_details, retrieve_atomic, scored_chunk
from kbgraph.eval.metrics import AnswerScores, answer_scores
from kbgraph.query.models import Candidate, ScoredChunk, UsageReport
from kbgraph.text import chunk_body
from kbgraph.eval.runner import parse_judgement


# --- records ------------------------------------------------------------------------------------------------
class SampledChunk(BaseModel):
    """Line 5: ``chunk_id`` = argmax of the UCB value ``ucb`` = S(c) + α sqrt(ln t / V(c)) over the pool, with
    its ``score`` S(c) and ``visits`` V(c) at that moment; ``values``: the UCB value of every chunk of the pool,
    in the pool's order; ``in_context``: the chunk was already in C_{t-1}."""

    chunk_id: str
    ucb: float
    score: float
    visits: int
    in_context: bool = False
    values: dict[str, float] = Field(default_factory=dict)


class ContextChunk(BaseModel):
    """A chunk of the final context C_t: its id and its text as the prompts show it (title, body)."""

    chunk_id: str
    title: str = ""
    text: str = ""


class TrajectoryStep(BaseModel):
    """One round t of Algorithm 2: the sampled chunk (line 5), the proposals (line 6), AC_t (line 7: every
    proposal's top-K' hits with similarity >= δ', proposal by proposal, best first; a question may appear under
    several proposals), RAP_t (lines 10-11: distinct relevant pairs offered to the selector), the S increments of
    this round per chunk (line 13), the selection (line 16) and the chunk that joined the context (line 21), or a
    ``note`` saying why the loop stopped."""

    round: int
    sampled: SampledChunk | None = None
    thinking: str = ""
    proposals: list[str] = Field(default_factory=list)
    candidates: list[Candidate] = Field(default_factory=list)
    relevant: list[Candidate] = Field(default_factory=list)
    score_updates: dict[str, float] = Field(default_factory=dict)
    selector_thinking: str = ""
    selected: Candidate | None = None
    chunk_id: str | None = None
    note: str = ""


class Trajectory(BaseModel):
    """One run of lines 1-27 on a question: its steps, the final context and answer (line 27), its scores against
    the gold ``answers`` (F1 etc., ``accuracy`` by the LLM judge or None) and ``score`` (accuracy when judged,
    else F1; in [0, 1]); ``correct``: score >= settings.decomposer.decomposer_correct_score. ``sample``: 1-based index of
    the trajectory among its question's; ``pool_scores`` / ``pool_visits``: S and V after it; ``params``: α, K,
    K', δ, δ', N; ``usage``: LLM usage of lines 1-27 (the judge excluded)."""

    question_id: str
    question: str
    answers: list[str] = Field(default_factory=list)
    sample: int = 1
    steps: list[TrajectoryStep] = Field(default_factory=list)
    context: list[ContextChunk] = Field(default_factory=list)
    answer: str = ""
    rationale: str = ""
    scores: AnswerScores = Field(default_factory=AnswerScores)
    accuracy: float | None = None
    judgement: str = ""
    score: float = 0.0
    correct: bool = False
    pool_scores: dict[str, float] = Field(default_factory=dict)
    pool_visits: dict[str, int] = Field(default_factory=dict)
    params: dict[str, Any] = Field(default_factory=dict)
    usage: UsageReport = Field(default_factory=UsageReport)

    def sub_questions(self) -> list[tuple[str, ContextChunk]]:
        """The decomposition (q^1, c^1), ..., (q^t, c^t): each selected atomic question with the chunk it brought
        into the context (Algorithm 3's sub-questions and their answers)."""
        chunks = {c.chunk_id: c for c in self.context}
        return [
            (s.selected.text, chunks[s.chunk_id]) for s in self.steps if s.selected is not None and s.chunk_id in chunks
        ]


# --- lines 2-3, 5, 13, 23-24 ---------------------------------------------------------------------------------
class ContextPool:
    """The score dictionary S and the visit dictionary V (lines 2-3): S(c) = 0 and V(c) = 1 for a chunk without a
    record; the sampling pool is the chunks with a record in S, in the order they got it."""

    def __init__(self) -> None:
        self.scores: dict[str, float] = {}
        self.visits: dict[str, int] = {}

    def ucb(self, chunk_id: str, t: int, alpha: float) -> float:
        """S(c) + α sqrt(ln t / V(c)) (line 5); t >= 1."""
        return self.scores.get(chunk_id, 0.0) + alpha * math.sqrt(math.log(t) / self.visits.get(chunk_id, 1))

    def sample(self, t: int, alpha: float) -> SampledChunk | None:
        """Line 5: the pool's chunk of highest UCB value (the first recorded on a tie); None for an empty pool."""
        if not self.scores:
            return None
        values = {c: self.ucb(c, t, alpha) for c in self.scores}
        best = max(values, key=values.__getitem__)
        return SampledChunk(
            chunk_id=best, ucb=values[best], score=self.scores[best], visits=self.visits.get(best, 1), values=values
        )

    def add(self, chunk_id: str, similarity: float) -> None:
        """Line 13: S(c) = S(c) + similarity."""
        self.scores[chunk_id] = self.scores.get(chunk_id, 0.0) + float(similarity)

    def chose(self, chunk_id: str) -> None:
        """Lines 23-24: S(c^t) = 0, V(c^t) = V(c^t) + 1."""
        self.scores[chunk_id] = 0.0
        self.visits[chunk_id] = self.visits.get(chunk_id, 1) + 1


# --- lines 7-15 ----------------------------------------------------------------------------------------------
def split_candidates(
    ctx: QueryContext, proposals: Sequence[str], vectors: np.ndarray, hits: Sequence[Candidate], *, k: int, delta: float
) -> tuple[list[Candidate], dict[str, float]]:
    """Lines 8-15 over AC_t = ``hits`` (``retrieve_atomic`` of the proposals at K', δ'): (RAP_t, the S increment
    per chunk). A distinct (question, chunk) pair is relevant when some proposal has it among its first ``k`` hits
    with similarity >= ``delta``; every other pair adds the max over all proposals of its cosine (with the
    question's stored vector, as line 10) to its chunk's S (module docstring). RAP_t keeps the pairs' first hits,
    in AC_t's order."""
    rank: dict[str, int] = {}
    first: dict[str, Candidate] = {}
    relevant: dict[str, Candidate] = {}
    for c in hits:
        r = rank[c.query] = rank.get(c.query, -1) + 1
        first.setdefault(c.question_id, c)
        if r < k and c.score >= delta:  # line 10
            relevant.setdefault(c.question_id, first[c.question_id])  # line 11
    rest = [c for qid, c in first.items() if qid not in relevant]
    updates: dict[str, float] = {}
    if rest:
        # line 13: the same vector space as line 10, the atomic question's stored vector (the index's)
        pvecs = np.asarray(vectors, dtype=np.float32).reshape(len(proposals), -1)
        ids = [c.question_id for c in rest]
        best: dict[str, float] = {}
        for pvec in pvecs:
            for qid, sim in ctx.store.atomic_question_similarities(ids, pvec.tolist()).items():
                best[qid] = max(best.get(qid, -1.0), sim)
        for c in rest:
            if c.question_id in best:
                updates[c.chunk_id] = updates.get(c.chunk_id, 0.0) + best[c.question_id]  # line 13
    return list(relevant.values()), updates


# --- one trajectory ------------------------------------------------------------------------------------------
class Params(BaseModel):
    """α, K, K', δ, δ', N of a run (from the settings unless given)."""

    alpha: float
    k: int
    k_prime: int
    delta: float
    delta_prime: float
    rounds: int


def run_trajectory(ctx: QueryContext, question: str, pool: ContextPool, p: Params) -> Trajectory:
    """Lines 1 and 4-27 of Algorithm 2 for ``question`` on ``ctx`` (its LLM is required), with the question's
    shared ``pool`` (lines 2-3; updated in place). Returns the unscored trajectory. Raises LLMError only for a
    failing server (an unusable JSON answer ends the loop, its note says so)."""
    store, embedder, llm = ctx.store, ctx.embedder, ctx.need_llm()
    meter = UsageMeter(llm)
    context: list[ScoredChunk] = []  # line 1
    traj = Trajectory(question_id="", question=question, params=p.model_dump())
    for t in range(1, p.rounds + 1):  # line 4
        step = TrajectoryStep(round=t)
        traj.steps.append(step)
        step.sampled = pool.sample(t, p.alpha)  # line 5
        shown = list(context)
        if step.sampled is not None:
            step.sampled.in_context = any(c.id == step.sampled.chunk_id for c in context)
            row = chunk_details(store, [step.sampled.chunk_id]).get(step.sampled.chunk_id)
            if row is not None and not step.sampled.in_context:
                shown.append(scored_chunk(row, step.sampled.ucb))
        proposal, stop = propose(llm, question, context_of(shown))  # line 6
        if proposal is not None:
            step.thinking, step.proposals = proposal.thinking, proposal.sub_questions
        if stop or proposal is None:  # (no proposal comes with a stop note)
            step.note = stop
            break
        vectors = embedder.embed(proposal.sub_questions)  # line 7
        step.candidates = retrieve_atomic(store, proposal.sub_questions, vectors, k=p.k_prime, threshold=p.delta_prime)
        relevant, step.score_updates = split_candidates(
            ctx, proposal.sub_questions, vectors, step.candidates, k=p.k, delta=p.delta
        )  # lines 8-15
        for chunk_id, inc in step.score_updates.items():
            pool.add(chunk_id, inc)
        known = {c.id for c in context}
        step.relevant = [c for c in relevant if c.chunk_id not in known]  # Algorithm 1's exclusion
        if not step.relevant:  # line 16 with nothing to select from: q^t = None
            step.note = f"stopped: no atomic question outside the context reaches similarity {p.delta:g}"
            break
        try:  # line 16
            messages = prompts.selector_messages(question, context_of(context), [c.text for c in step.relevant])
            sel = llm.complete_json(messages, Selection)
            step.selector_thinking = sel.thinking
            idx = sel.question_idx
        except LLMError as exc:
            step.selector_thinking, idx = f"(no valid selection JSON: {exc})", None
        if idx is None or not 1 <= idx <= len(step.relevant):  # lines 17-19
            step.note = "stopped: nothing selected"
            break
        chosen = step.relevant[idx - 1]  # lines 21-24
        row = chunk_details(store, [chosen.chunk_id]).get(chosen.chunk_id, {"id": chosen.chunk_id})
        step.selected, step.chunk_id = chosen, chosen.chunk_id
        context.append(scored_chunk(row, chosen.score))
        pool.chose(chosen.chunk_id)
    out = final_answer(llm, question, context)  # line 27
    traj.answer, traj.rationale = out.answer, out.rationale
    traj.context = [
        ContextChunk(chunk_id=c.id, title=c.document_title, text=chunk_body(c.kind, c.text, c.summary)) for c in context
    ]
    traj.pool_scores, traj.pool_visits = dict(pool.scores), dict(pool.visits)
    traj.usage = meter.report()
    return traj


def score_trajectory(
    ctx: QueryContext, traj: Trajectory, *, judge: bool = False, judge_model: str | None = None
) -> None:
    """Fill ``traj``'s scores against its gold ``answers`` (§6.4; Fig. 12 d): F1 etc. (PIKE-RAG §6.1) and, with
    ``judge`` and labels, the LLM judge's accuracy (1, 0, or None when the reply is neither yes nor no)."""
    traj.scores = answer_scores(traj.answer, traj.answers)
    if judge and traj.answers:
        reply = ctx.need_llm().complete(
            prompts.judge_messages(traj.question, traj.answers, traj.answer), model=judge_model, temperature=0.0
        )
        traj.judgement, traj.accuracy = reply.strip()[:200], parse_judgement(reply)
    traj.score = traj.accuracy if traj.accuracy is not None else traj.scores.f1
    traj.correct = traj.score >= ctx.settings.decomposer.decomposer_correct_score


def resolve_params(
    ctx: QueryContext,
    *,
    alpha: float | None = None,
    k_prime: int | None = None,
    delta_prime: float | None = None,
    rounds: int | None = None,
) -> Params:
    """The run's α, K', δ', N as given (None = the setting), K and δ from Algorithm 1's settings. Raises
    ConfigError when K' < K or δ' > δ (Algorithm 2 retrieves wider than Algorithm 1: K' > K, δ' < δ)."""
    s = ctx.settings
    p = Params(
        alpha=s.decomposer.decomposer_alpha if alpha is None else alpha,
        k=s.decompose.decompose_candidates,
        delta=s.decompose.decompose_threshold,
        k_prime=s.decomposer.decomposer_k_prime if k_prime is None else k_prime,
        delta_prime=s.decomposer.decomposer_delta_prime if delta_prime is None else delta_prime,
        rounds=s.decomposer.decomposer_rounds if rounds is None else rounds,
    )
    if p.k_prime < p.k:
        raise ConfigError(f"K' ({p.k_prime}) must be at least K ({p.k}): raise KBGRAPH_DECOMPOSER_K_PRIME")
    if p.delta_prime > p.delta:
        raise ConfigError(f"δ' ({p.delta_prime}) must not exceed δ ({p.delta}): lower KBGRAPH_DECOMPOSER_DELTA_PRIME")
    if p.alpha < 0 or p.rounds < 1:
        raise ConfigError(f"α must be >= 0 and N >= 1, got α={p.alpha}, N={p.rounds}")
    return p


def collect_trajectories(
    ctx: QueryContext,
    questions: Iterable[EvalQuestion],
    *,
    alpha: float | None = None,
    k_prime: int | None = None,
    delta_prime: float | None = None,
    rounds: int | None = None,
    samples: int | None = None,
    until_correct: bool | None = None,
    judge: bool = False,
    judge_model: str | None = None,
) -> Iterator[Trajectory]:
    """Algorithm 2 on each question (``EvalQuestion``: id, question, gold answers) against ``ctx`` (LLM required):
    up to ``samples`` trajectories per question sharing S and V, stopping after the first correct one when
    ``until_correct`` (module docstring). Parameters default to the ``decomposer_*`` settings (K and δ:
    ``decompose_candidates``, ``decompose_threshold``). Yields each scored trajectory as it finishes.
    Raises ConfigError without an LLM or for K' < K, δ' > δ; LLMError for a failing server."""
    if ctx.llm is None:
        raise ConfigError("collecting decomposer data needs an LLM: set KBGRAPH_LLM_BASE_URL and KBGRAPH_LLM_MODEL")
    p = resolve_params(ctx, alpha=alpha, k_prime=k_prime, delta_prime=delta_prime, rounds=rounds)
    s = ctx.settings
    samples = s.decomposer.decomposer_samples if samples is None else samples
    until_correct = s.decomposer.decomposer_until_correct if until_correct is None else until_correct
    if samples < 1:
        raise ConfigError(f"samples must be >= 1, got {samples}")
    for q in questions:
        pool = ContextPool()  # lines 2-3, once per question
        for n in range(1, samples + 1):
            traj = run_trajectory(ctx, q.question, pool, p)
            traj.question_id, traj.answers, traj.sample = q.id, list(q.answers), n
            score_trajectory(ctx, traj, judge=judge, judge_model=judge_model)
            yield traj
            if until_correct and traj.correct:
                break
