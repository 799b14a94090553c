"""``kbgraph rank``: the learned ranker of score propagation (kbgraph.query.propagation.ranking_learned); ``register(app)`` adds it
to the ``kbgraph`` command.

* ``train``: fit a ranker model on one or more labelled data sets (``--model linear|gbm|blend``: the trainers of
  kbgraph.eval.rank_train_shipped) and write it; ``--shipped`` rebuilds the shipped file from the repo's sets.
  Prints passage recall in pool order, with the fitted model (in-set) and, with two sets or more, each set scored
  by a model fitted on the others (leave-one-set-out).
* ``show``: the model in use (the shipped one, or ``KBGRAPH_RANKER_MODEL``): its features and weights (a gbm
  model: how often each feature splits).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import typer

from kbgraph.cli import common
from kbgraph.errors import ConfigError
from kbgraph.query.propagation.rankers import get_ranker
from kbgraph.eval.dataset import load_dataset
from kbgraph.eval.rank_train import write_model
from kbgraph.eval.rank_train_shipped import (
    SHIPPED,
    SHIPPED_SETTINGS,
    TRAINERS,
    TrainParams,
    check_order,
    get_trainer,
    repo_sets,
)
from kbgraph.kb import KnowledgeBase

if TYPE_CHECKING:
    from kbgraph.eval.rank_train import LabelledPool

rank_app = typer.Typer(no_args_is_help=True, help="The learned ranker of score propagation (train it, show it).")


@rank_app.command("train")
def train_cmd(
    dataset: list[str] = typer.Option(
        [],
        "--dataset",
        "-d",
        help="Data set (repeatable): <prefix> of <prefix>.questions.jsonl/.corpus.jsonl, or its folder.",
    ),
    out: str | None = typer.Option(
        None, "--out", help="Where to write the model (JSON; default with --shipped: the shipped file it rebuilds)."
    ),
    model_kind: str = typer.Option(
        "linear",
        "--model",
        help=f"{' | '.join(TRAINERS)}: linear (ranker 'learned'), "
        "gbm (ranker 'gbm') or blend (the blend ranker's gbm, fitted on the shipped "
        "linear model's heads); gbm and blend need LightGBM (the eval extra).",
    ),
    shipped: bool = typer.Option(
        False,
        "--shipped",
        help="Rebuild the shipped model byte for byte: the repo's "
        "three sets (examples/multihop of a checkout) and the shipped parameters.",
    ),
    pool: int | None = typer.Option(
        None, "--pool", help="Candidate chunks per question (default KBGRAPH_RANKER_POOL)."
    ),
    c: float | None = typer.Option(
        None, "--c", help=f"Inverse regularisation of the linear model (default {SHIPPED.c})."
    ),
    head: int | None = typer.Option(
        None, "--head", help=f"blend: the shipped linear model's best N of each pool (default {SHIPPED.head})."
    ),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N questions of each data set."),
    no_ingest: bool = typer.Option(False, "--no-ingest", help="Do not ingest the data sets' corpora first."),
    as_json: bool = typer.Option(False, "--json", help="Print the recall table as JSON."),
) -> None:
    """Fit a ranker model on labelled questions (questions.jsonl with gold_passage_ids and a passage corpus, the
    format of `kbgraph eval`). Each data set's knowledge base is named after it (as `kbgraph eval` names it; --kb
    names it for one data set), built from its corpus on first use; each set weighs the same in the fit.
    `--shipped` rebuilds kbgraph/resources/ranker/<model>.json from the repo's sets (docs/scoring.md)."""
    import json

    trainer = get_trainer(model_kind)
    settings = common.settings()
    if shipped:
        settings = settings.updated(dict(SHIPPED_SETTINGS))  # the settings the shipped pools were collected under
    params = _params(shipped, dataset, pool, c, head, limit, settings.retrieval.ranker_pool)
    paths = [str(p) for p in repo_sets()] if shipped else dataset
    if not paths:
        raise ConfigError("give the data sets with --dataset (or --shipped: the repo's)")
    target = out or (str(trainer.shipped()) if shipped else None)
    if target is None:
        raise ConfigError("--out: where to write the model (only --shipped has a default)")
    err = common.err_console
    say: Callable[[str], None] = (lambda m: None) if as_json else (lambda m: err.print(m, highlight=False))
    by_set: dict[str, list[LabelledPool]] = {}
    kb_name = common.State.overrides.get("name")
    if kb_name and len(paths) > 1:
        raise ConfigError("--kb names the knowledge base of one data set; with several, each has its own (drop --kb)")
    for path in paths:
        ds = load_dataset(path)
        with KnowledgeBase(settings=settings.updated({"name": kb_name or ds.name})) as kb:
            if ds.corpus_path is not None and not no_ingest:
                say(f"ingesting {ds.corpus_path.name} into knowledge base {kb.name!r} (incremental)")
                kb.ingest([ds.corpus_path], progress=None if not as_json else False)
            say(f"{ds.name}: candidate pools of {len(ds.questions)} questions")
            by_set[ds.name] = trainer.collect(kb, ds, params, say)
    if shipped:
        check_order(list(by_set))
    table = trainer.table(by_set, params)
    written = write_model(trainer.train(by_set, params), target)
    if as_json:
        sys.stdout.write(json.dumps({"model": str(written), "recall": table}, indent=2) + "\n")
        return
    _print_table(table)
    common.console.print(f"model written to {written}; use it with {trainer.use.replace('<file>', str(written))}")


def _params(
    shipped: bool,
    dataset: list[str],
    pool: int | None,
    c: float | None,
    head: int | None,
    limit: int | None,
    default_pool: int,
) -> TrainParams:
    """The fit's parameters: the shipped ones with ``--shipped`` (which then takes no data set, pool, C, head or
    limit: ConfigError), else the options given over them (the pool: ``ranker_pool``)."""
    if shipped:
        given = [
            name
            for name, v in (
                ("--dataset", dataset or None),
                ("--pool", pool),
                ("--c", c),
                ("--head", head),
                ("--limit", limit),
            )
            if v is not None
        ]
        if given:
            raise ConfigError(f"--shipped fixes the data sets and parameters; drop {', '.join(given)}")
        return SHIPPED
    return TrainParams(
        pool=pool or default_pool, c=SHIPPED.c if c is None else c, head=head or SHIPPED.head, limit=limit
    )


def _print_table(table: dict[str, dict[str, dict[str, float]]]) -> None:
    from rich.table import Table

    t = Table(title="Passage recall (%): pool order | the model (in-set) | the model fitted on the other sets")
    for col in ("data set", "ranker", "R@1", "R@2", "R@5", "R@10"):
        t.add_column(col)
    for name, row in table.items():
        for variant, r in row.items():
            t.add_row(name, variant, *(f"{r[f'R@{k}']:.1f}" for k in (1, 2, 5, 10)))
    common.console.print(t)


@rank_app.command("show")
def show_cmd() -> None:
    """The ranker model in use: where it comes from, what it was fitted on, and each feature's weight."""
    settings = common.settings()
    for line in get_ranker(settings.retrieval.ranker).describe(settings):  # kbgraph.query.propagation.rankers
        common.console.print(line, highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``kbgraph rank`` to ``app``."""
    app.add_typer(rank_app, name="rank")
