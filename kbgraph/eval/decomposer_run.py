"""``kbgraph decomposer collect``: Algorithm 2 (PIKE-RAG §5.3.3; kbgraph.eval.decomposer_data) over the
questions of a multi-hop data set (kbgraph.eval.dataset, as ``kbgraph eval`` takes it), written to a folder:

* ``collect.json``: what defines the run (data set, knowledge base, models, α, K, K', δ, δ', N, trajectories per
  question, judge). A folder holding another run's ``collect.json`` is refused (the error names what differs);
  a non-empty folder without one is refused too. The same configuration resumes: questions already in
  ``trajectories.jsonl`` are skipped (``limit`` may grow between runs).
* ``trajectories.jsonl``: one :class:`Trajectory` a line; a question's trajectories are appended together and
  flushed once the question is done.
* ``summary.json``: :class:`CollectSummary`: counts and the score distribution.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from pydantic import BaseModel, Field

from kbgraph.errors import ConfigError
from kbgraph.eval.dataset import load_dataset, select_questions
from kbgraph.query.answering import UsageMeter
from kbgraph.query.context import QueryContext
from kbgraph.eval.decomposer_data import Trajectory, collect_trajectories, resolve_params
from kbgraph.eval.decomposer_sft import read_trajectories, sft_pairs, TRAJECTORIES
from kbgraph.store import backend_name
from kbgraph.text import utc_now
from kbgraph.llm.base import LLM

if TYPE_CHECKING:
    from kbgraph.eval.target import EvalTarget

CONFIG, SUMMARY = "collect.json", "summary.json"
#: Bins of the score distribution: [low, high) except the last, which is exactly 1.0.
BINS = (
    (0.0, 1e-9, "0"),
    (1e-9, 0.25, "(0, 0.25)"),
    (0.25, 0.5, "[0.25, 0.5)"),
    (0.5, 0.75, "[0.5, 0.75)"),
    (0.75, 1.0, "[0.75, 1)"),
    (1.0, 2.0, "1"),
)


class ScoreDistribution(BaseModel):
    """Scores (each in [0, 1]): count, mean, median, min, max and a histogram over :data:`BINS`."""

    n: int = 0
    mean: float | None = None
    median: float | None = None
    min: float | None = None
    max: float | None = None
    histogram: dict[str, int] = Field(default_factory=dict)


def distribution(scores: Sequence[float]) -> ScoreDistribution:
    """The :class:`ScoreDistribution` of ``scores``."""
    hist = {label: sum(1 for s in scores if lo <= s < hi) for lo, hi, label in BINS}
    if not scores:
        return ScoreDistribution(histogram=hist)
    return ScoreDistribution(
        n=len(scores),
        mean=round(statistics.fmean(scores), 4),
        median=round(statistics.median(scores), 4),
        min=min(scores),
        max=max(scores),
        histogram=hist,
    )


class CollectSummary(BaseModel):
    """What a collect run holds: questions selected and done (new in this run, found from an earlier one),
    trajectories, sub-questions selected (steps with a chunk), correct trajectories and questions with one, the
    SFT pairs Algorithm 3 gives from the correct trajectories (before duplicates are dropped), the score
    distribution per trajectory and of each question's best trajectory, F1 and judge means, the run's
    configuration, LLM usage of this run and its wall time (seconds)."""

    out: Path
    dataset: str
    kb: str
    questions: int = 0
    questions_done: int = 0
    new_questions: int = 0
    reused_questions: int = 0
    trajectories: int = 0
    sub_questions: int = 0
    correct_trajectories: int = 0
    correct_questions: int = 0
    sft_pairs_correct: int = 0
    scores: ScoreDistribution = Field(default_factory=ScoreDistribution)
    best_scores: ScoreDistribution = Field(default_factory=ScoreDistribution)
    f1_mean: float | None = None
    accuracy_mean: float | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, Any] = Field(default_factory=dict)
    seconds: float = 0.0
    finished_at: str = ""


def _open_folder(out: Path, identity: dict[str, Any]) -> None:
    """Create ``out`` for this run, or check that it holds the same run. Raises ConfigError otherwise."""
    config = out / CONFIG
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file: give a folder")
    if config.is_file():
        before = json.loads(config.read_text(encoding="utf-8"))
        diff = sorted(k for k in set(before) | set(identity) if before.get(k) != identity.get(k))
        if diff:
            shown = ", ".join(f"{k}: {before.get(k)!r} -> {identity.get(k)!r}" for k in diff)
            raise ConfigError(f"{out} holds a collect run of another configuration ({shown}); use another --out")
        return
    if out.is_dir() and any(out.iterdir()):
        raise ConfigError(f"{out} is not empty and holds no collect run ({CONFIG}); give an empty or new --out folder")
    out.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps(identity, indent=2, ensure_ascii=False), encoding="utf-8")


class CollectCounts(TypedDict):
    """The counts and distributions of :class:`CollectSummary` (:func:`summarize`)."""

    questions_done: int
    trajectories: int
    sub_questions: int
    correct_trajectories: int
    correct_questions: int
    sft_pairs_correct: int
    scores: ScoreDistribution
    best_scores: ScoreDistribution
    f1_mean: float | None
    accuracy_mean: float | None


class CollectParams(TypedDict, total=False):
    """The Algorithm 2 parameters of :func:`collect_dataset` (None or absent = the ``decomposer_*`` setting)."""

    alpha: float | None
    k_prime: int | None
    delta_prime: float | None
    rounds: int | None
    samples: int | None
    until_correct: bool | None


def summarize(trajectories: Sequence[Trajectory], *, correct_score: float) -> CollectCounts:
    """The counts and distributions of :class:`CollectSummary` over ``trajectories``."""
    best: dict[str, float] = {}
    for t in trajectories:
        best[t.question_id] = max(best.get(t.question_id, 0.0), t.score)
    correct = [t for t in trajectories if t.score >= correct_score]
    judged = [t.accuracy for t in trajectories if t.accuracy is not None]
    return CollectCounts(
        questions_done=len(best),
        trajectories=len(trajectories),
        sub_questions=sum(len(t.sub_questions()) for t in trajectories),
        correct_trajectories=len(correct),
        correct_questions=len({t.question_id for t in correct}),
        sft_pairs_correct=sum(len(sft_pairs(t)) for t in correct),
        scores=distribution([t.score for t in trajectories]),
        best_scores=distribution(list(best.values())),
        f1_mean=round(statistics.fmean(t.scores.f1 for t in trajectories), 4) if trajectories else None,
        accuracy_mean=round(statistics.fmean(judged), 4) if judged else None,
    )


def _identity(
    kb: EvalTarget, questions: Path, llm: LLM, params: dict[str, Any], run: dict[str, Any], judge_model: str | None
) -> dict[str, Any]:
    """What makes a collection run the one a folder holds (``config.json``): the data set, the knowledge base, its
    backend and models, Algorithm 2's parameters ``params`` and the run's ``run`` (sample, seed, samples,
    until_correct), the judge's model (None without a judge)."""
    s = kb.settings
    return {
        "dataset": str(questions),
        "sample": run["sample"],
        "seed": run["seed"],
        "kb": kb.name,
        "backend": backend_name(s),
        "llm_model": getattr(llm, "default_model", None) or s.llm.llm_model,
        "embedding_model": s.embedding.embedding_model,
        **params,
        "samples": run["samples"],
        "until_correct": run["until_correct"],
        "judge_model": judge_model,
        "correct_score": s.decomposer.decomposer_correct_score,
    }


def collect_dataset(
    kb: EvalTarget,
    dataset: str | Path,
    out: str | Path,
    *,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    judge: bool | None = None,
    judge_model: str | None = None,
    ingest: bool = True,
    llm: LLM | None = None,
    log: Callable[[str], None] | None = None,
    **params: Unpack[CollectParams],
) -> CollectSummary:
    """Run Algorithm 2 on the questions of ``dataset`` (``limit`` / ``sample`` with ``seed`` as ``kbgraph eval``)
    against ``kb`` and write the folder ``out`` (module docstring). ``ingest``: ingest the data set's corpus into
    ``kb`` first (incremental); ``judge``: LLM-judged accuracy (default: on); ``llm``: override ``kb.llm``;
    ``params``: alpha, k_prime, delta_prime, rounds, samples, until_correct (default: the ``decomposer_*``
    settings). Returns the summary (also ``summary.json``). Raises ConfigError without an LLM, for a folder of
    another run or a bad parameter; an interrupted run keeps every finished question (a re-run resumes)."""
    t0, say = time.perf_counter(), log or (lambda _m: None)
    ds = load_dataset(dataset)
    llm = kb.llm if llm is None else llm
    if llm is None:
        raise ConfigError("collecting decomposer data needs an LLM: set KBGRAPH_LLM_BASE_URL and KBGRAPH_LLM_MODEL")
    if limit is not None and limit < 1:
        raise ConfigError(f"limit must be >= 1, got {limit}")
    ctx = QueryContext(kb.store, kb.settings, kb.embedder, llm)
    s = kb.settings
    p = resolve_params(
        ctx,
        alpha=params.get("alpha"),
        k_prime=params.get("k_prime"),
        delta_prime=params.get("delta_prime"),
        rounds=params.get("rounds"),
    )
    samples = params.get("samples") or s.decomposer.decomposer_samples
    until = s.decomposer.decomposer_until_correct if params.get("until_correct") is None else params["until_correct"]
    judge = True if judge is None else judge
    judge_model = judge_model or getattr(llm, "default_model", None) or s.llm.llm_model
    run = {"sample": sample, "seed": seed, "samples": samples, "until_correct": until}
    identity = _identity(kb, ds.questions_path, llm, p.model_dump(), run, judge_model if judge else None)
    out = Path(out).expanduser()
    _open_folder(out, identity)
    if ingest and ds.corpus_path is not None:
        say(f"ingesting {ds.corpus_path.name} into knowledge base {kb.name!r} (incremental)")
        report = kb.ingest([ds.corpus_path], progress=False)
        say(f"  {report.added} added, {report.unchanged} unchanged, {report.failed} failed")
    questions = select_questions(ds.questions, sample=sample, limit=limit, seed=seed)
    path = out / TRAJECTORIES
    done = list(read_trajectories(path)) if path.is_file() else []
    done_ids = {t.question_id for t in done}
    todo = [q for q in questions if q.id not in done_ids]
    say(f"{len(questions)} questions: {len(todo)} to run, {len(questions) - len(todo)} already done")
    meter = UsageMeter(llm)
    new: list[Trajectory] = []
    with path.open("a", encoding="utf-8") as f:
        for i, q in enumerate(todo, start=1):
            batch = list(
                collect_trajectories(
                    ctx,
                    [q],
                    alpha=p.alpha,
                    k_prime=p.k_prime,
                    delta_prime=p.delta_prime,
                    rounds=p.rounds,
                    samples=samples,
                    until_correct=until,
                    judge=judge,
                    judge_model=judge_model,
                )
            )
            f.write("".join(t.model_dump_json() + "\n" for t in batch))
            f.flush()
            new += batch
            say(f"[{i}/{len(todo)}] {q.id}: {len(batch)} trajectories, best score {max(t.score for t in batch):.2f}")
    selected = {q.id for q in questions}
    mine = [t for t in done + new if t.question_id in selected]
    summary = CollectSummary(
        out=out.resolve(),
        dataset=ds.name,
        kb=kb.name,
        questions=len(questions),
        new_questions=len(todo),
        reused_questions=len(questions) - len(todo),
        config=identity,
        usage=meter.report().model_dump(),
        seconds=round(time.perf_counter() - t0, 2),
        finished_at=utc_now(),
        **summarize(mine, correct_score=s.decomposer.decomposer_correct_score),
    )
    (out / SUMMARY).write_text(summary.model_dump_json(indent=2), encoding="utf-8")
    return summary
