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
from kbgraph.query.ranking import default_model_path, load_model
from kbgraph.query.ranking_gbm import default_blend_path, default_gbm_path, load_gbm_model
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

    if model_kind not in ("linear", "gbm"):
        raise ConfigError(f"--model {model_kind!r}: linear or gbm")
    gbm = model_kind == "gbm"
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
    ranker = " KBGRAPH_RANKER=gbm" if gbm else ""
    common.console.print(f"model written to {written}; use it with KBGRAPH_RANKER_MODEL={written}{ranker}")


@rank_app.command("show")
def show_cmd() -> None:
    """The ranker model in use: where it comes from, what it was fitted on, and each feature's weight."""
    settings = common.settings()
    if settings.retrieval.ranker == "blend":  # kbgraph.query.ranking_blend: the two shipped models
        common.console.print(f"ranker: blend = z(learned) + {settings.retrieval.ranker_blend_weight} x z(gbm) over the "
                             f"learned ranker's best {settings.retrieval.ranker_blend_k} (0: all), the shipped models "
                             f"{default_model_path()} and {default_blend_path()}", highlight=False)  # fmt: skip
        return
    if settings.retrieval.ranker == "gbm":
        path = settings.retrieval.ranker_model or default_gbm_path()
        trees = load_gbm_model(path)
        common.console.print(f"ranker: gbm; model {path}; fitted on {', '.join(trees.trained_on) or '?'}; pool "
                             f"{trees.pool}; {len(trees.trees)} trees; splits per feature:", highlight=False)  # fmt: skip
        for name, n in sorted(trees.split_counts().items(), key=lambda kv: -kv[1]):
            common.console.print(f"  {name:22} {n}", highlight=False)
        return
    path = settings.retrieval.ranker_model or default_model_path()
    model = load_model(path)
    common.console.print(f"ranker: {settings.retrieval.ranker}; model {path}; fitted on {', '.join(model.trained_on) or '?'}; "
                         f"pool {model.pool}", highlight=False)  # fmt: skip
    for name, w, s in zip(model.features, model.coef, model.scale, strict=True):
        common.console.print(f"  {name:14} {w:+.3f} (per unit {w / s:+.3f})", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``kbgraph rank`` to ``app``."""
    app.add_typer(rank_app, name="rank")
