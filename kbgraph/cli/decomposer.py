"""``kbgraph decomposer``: training data for a knowledge-aware decomposer (PIKE-RAG §5.3.3, §6.4), one library call
per verb; ``register(app)`` adds them to the ``kbgraph`` command.

* ``collect``: Algorithm 2 on a data set's questions -> DIR/trajectories.jsonl + summary.json
  (``kbgraph.eval.decomposer_run.collect_dataset``);
* ``sft``: Algorithm 3's (x_i, y_i) pairs as chat fine-tuning JSONL (``kbgraph.eval.decomposer_sft.write_sft``).

A model trained on that file is used by setting ``KBGRAPH_DECOMPOSER_MODEL`` (kbgraph.query.methods.decomposer_learned).
"""

from __future__ import annotations

import sys

import typer

from kbgraph.cli import common
from kbgraph.eval.dataset import load_dataset
from kbgraph.kb import KnowledgeBase
from kbgraph.eval.decomposer_run import collect_dataset
from kbgraph.eval.decomposer_sft import write_sft

decomposer_app = typer.Typer(
    no_args_is_help=True, help="Training data for a knowledge-aware decomposer (PIKE-RAG Algorithms 2 and 3)."
)


@decomposer_app.command("collect")
def collect_cmd(
    dataset: str = typer.Option(
        ..., "--dataset", "-d", help="Data set: <prefix> of <prefix>.questions.jsonl/.corpus.jsonl, or its folder."
    ),
    out: str = typer.Option(..., "--out", help="Output folder (new or empty; the same run resumes)."),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N (selected) questions."),
    sample: int | None = typer.Option(None, "--sample", help="N questions drawn at random with --seed."),
    seed: int = typer.Option(0, "--seed", help="Seed of --sample."),
    samples: int | None = typer.Option(
        None, "--samples", help="Trajectories per question at most (default KBGRAPH_DECOMPOSER_SAMPLES)."
    ),
    rounds: int | None = typer.Option(None, "--rounds", help="N, rounds per trajectory (KBGRAPH_DECOMPOSER_ROUNDS)."),
    judge: bool = typer.Option(True, "--judge/--no-judge", help="Score with the LLM judge too (else F1 only)."),
    no_ingest: bool = typer.Option(False, "--no-ingest", help="Do not ingest the data set's corpus first."),
    as_json: bool = typer.Option(False, "--json", help="Print summary.json."),
) -> None:
    """Run Algorithm 2 (UCB context sampling, K' > K at δ' < δ) on a data set's questions and write every
    trajectory, scored against the gold answers. The knowledge base is named after the data set unless --kb is
    given."""

    settings = common.settings()
    name = common.State.overrides.get("name") or load_dataset(dataset).name
    err = common.err_console
    with KnowledgeBase(settings=settings.updated({"name": name})) as kb:
        summary = collect_dataset(
            kb,
            dataset,
            out,
            limit=limit,
            sample=sample,
            seed=seed,
            judge=judge,
            ingest=not no_ingest,
            samples=samples,
            rounds=rounds,
            log=None if as_json else lambda m: err.print(m, highlight=False),
        )
    if as_json:
        sys.stdout.write(summary.model_dump_json(indent=2) + "\n")
        return
    s = summary.scores
    common.console.print(
        f"{summary.questions_done}/{summary.questions} questions, {summary.trajectories} trajectories, "
        f"{summary.sub_questions} sub-questions; correct: {summary.correct_trajectories} trajectories, "
        f"{summary.correct_questions} questions ({summary.sft_pairs_correct} SFT pairs)",
        highlight=False,
    )
    mean = "–" if s.mean is None else f"{s.mean:.3f}"
    hist = ", ".join(f"{k}: {v}" for k, v in s.histogram.items())
    common.console.print(f"score: mean {mean}; {hist}", highlight=False)
    common.console.print(f"written: {summary.out}", highlight=False)


@decomposer_app.command("sft")
def sft_cmd(
    source: str = typer.Option(..., "--in", help="A `decomposer collect` folder (or its trajectories.jsonl)."),
    out: str = typer.Option(..., "--out", help="The chat fine-tuning JSONL file to write."),
    min_score: float | None = typer.Option(
        None,
        "--min-score",
        help="Keep trajectories scoring at least this (default KBGRAPH_DECOMPOSER_CORRECT_SCORE: correct ones, §6.4).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Turn trajectories into Algorithm 3's (x_i, y_i) pairs, one chat record (system, user, assistant) a line."""

    threshold = common.settings().decomposer.decomposer_correct_score if min_score is None else min_score
    report = write_sft(source, out, min_score=threshold)
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
        return
    common.console.print(
        f"{report.pairs} pairs from {report.kept}/{report.trajectories} trajectories with score >= "
        f"{report.min_score:g} ({report.questions} questions; {report.duplicates} duplicate pairs skipped) -> "
        f"{report.out}",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    """Add ``decomposer collect`` and ``decomposer sft`` to ``app``."""
    app.add_typer(decomposer_app, name="decomposer")
