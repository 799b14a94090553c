"""``kbgraph rank``: the learned ranker of score propagation (kbgraph.query.ranking); ``register(app)`` adds it
to the ``kbgraph`` command.

* ``train``: fit the ranker on one or more labelled data sets (kbgraph.eval.rank_train; ``--model gbm``: the gbm
  ranker, kbgraph.eval.rank_train_gbm) and write the model; prints passage recall with the weighted sum, the
  fitted model (in-set) and, with two sets or more, each set scored by a model fitted on the others
  (leave-one-set-out).
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
from kbgraph.query.rankers import DEFAULT_RANKER, RANKERS, get_ranker
from kbgraph.eval.dataset import load_dataset
from kbgraph.eval.rank_train import collect_pools, fit, leave_one_out, write_model
from kbgraph.eval.rank_train_gbm import collect_gbm_pools, fit_gbm, leave_one_out_gbm
from kbgraph.kb import KnowledgeBase

if TYPE_CHECKING:
    from kbgraph.eval.rank_train import LabelledPool

rank_app = typer.Typer(no_args_is_help=True, help="The learned ranker of score propagation (train it, show it).")


@rank_app.command("train")
def train_cmd(
    dataset: list[str] = typer.Option(..., "--dataset", "-d", help="Data set (repeatable): <prefix> of "
                                      "<prefix>.questions.jsonl/.corpus.jsonl, or its folder."),  # fmt: skip
    out: str = typer.Option(..., "--out", help="Where to write the model (JSON); use it with KBGRAPH_RANKER_MODEL."),
    pool: int | None = typer.Option(None, "--pool", help="Candidate chunks per question (default KBGRAPH_RANKER_POOL)."),
    c: float = typer.Option(1.0, "--c", help="Inverse regularisation strength of the logistic regression."),
    model_kind: str = typer.Option("linear", "--model", help="linear (ranker 'learned') or gbm (ranker 'gbm', "
                                   "needs LightGBM: the eval extra)."),  # fmt: skip
    limit: int | None = typer.Option(None, "--limit", help="Only the first N questions of each data set."),
    no_ingest: bool = typer.Option(False, "--no-ingest", help="Do not ingest the data sets' corpora first."),
    as_json: bool = typer.Option(False, "--json", help="Print the recall table as JSON."),
) -> None:
    """Fit the learned ranker on labelled questions (questions.jsonl with gold_passage_ids and a passage corpus,
    the format of `kbgraph eval`). Each data set's knowledge base is named after it (as `kbgraph eval` names
    it; --kb names it for one data set), built from its corpus on first use; each set weighs the same in the
    fit."""
    import json

    trained = {row.train_model: row for row in RANKERS.values() if row.train_model}  # --model -> its ranker
    if model_kind not in trained:
        raise ConfigError(f"--model {model_kind!r}: {' or '.join(trained)}")
    ranker = trained[model_kind]
    gbm = ranker.reads_texts  # a model over the list features, of the candidates' texts: kbgraph.eval.rank_train_gbm
    collect = collect_gbm_pools if gbm else collect_pools
    settings = common.settings()
    size = pool or settings.retrieval.ranker_pool
    err = common.err_console
    say: Callable[[str], None] = (lambda m: None) if as_json else (lambda m: err.print(m, highlight=False))
    by_set: dict[str, list[LabelledPool]] = {}
    kb_name = common.State.overrides.get("name")
    if kb_name and len(dataset) > 1:
        raise ConfigError("--kb names the knowledge base of one data set; with several, each has its own (drop --kb)")
    for path in dataset:
        ds = load_dataset(path)
        with KnowledgeBase(settings=settings.updated({"name": kb_name or ds.name})) as kb:
            if ds.corpus_path is not None and not no_ingest:
                say(f"ingesting {ds.corpus_path.name} into knowledge base {ds.name!r} (incremental)")
                kb.ingest([ds.corpus_path], progress=None if not as_json else False)
            say(f"{ds.name}: candidate pools of {len(ds.questions)} questions")
            by_set[ds.name] = collect(kb, ds, pool=size, limit=limit, log=say)
    table = leave_one_out_gbm(by_set, pool=size) if gbm else leave_one_out(by_set, pool=size, c=c)
    model = fit_gbm(by_set, pool=size) if gbm else fit(by_set, pool=size, c=c)
    model.note = f"kbgraph rank train --model {model_kind} --pool {size}" + ("" if gbm else f" --c {c}") + \
        (f" --limit {limit}" if limit else "")  # fmt: skip
    written = write_model(model, out)
    if as_json:
        sys.stdout.write(json.dumps({"model": str(written), "recall": table}, indent=2) + "\n")
        return
    from rich.table import Table

    t = Table(title="Passage recall (%): weighted sum | learned (in-set) | learned (fitted on the other sets)")
    for col in ("data set", "ranker", "R@1", "R@2", "R@5", "R@10"):
        t.add_column(col)
    for name, row in table.items():
        for variant, r in row.items():
            t.add_row(name, variant, *(f"{r[f'R@{k}']:.1f}" for k in (1, 2, 5, 10)))
    common.console.print(t)
    use = f" KBGRAPH_RANKER={ranker.name}" if ranker.name != DEFAULT_RANKER else ""
    common.console.print(f"model written to {written}; use it with KBGRAPH_RANKER_MODEL={written}{use}")


@rank_app.command("show")
def show_cmd() -> None:
    """The ranker model in use: where it comes from, what it was fitted on, and each feature's weight."""
    settings = common.settings()
    for line in get_ranker(settings.retrieval.ranker).describe(settings):  # kbgraph.query.rankers
        common.console.print(line, highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``kbgraph rank`` to ``app``."""
    app.add_typer(rank_app, name="rank")
