"""The ranker models ``kbgraph rank train`` fits, and the shipped ones it rebuilds byte for byte.

Each :class:`Trainer` row is one ``--model``: how its pools are collected (kbgraph.eval.rank_train,
rank_train_gbm, rank_train_blend), how it is fitted, the command line its model records (``note``) and the shipped
file it rebuilds. The shipped models (``kbgraph/resources/ranker/``) were each fitted by the library on the repo's
three labelled sets (:data:`TRAIN_SETS`, examples/multihop of a checkout, in that order), each set's knowledge base
ingested from its corpus with the default settings, with the parameters of :data:`SHIPPED`:

* ``default.json`` (ranker 'learned'): ``kbgraph rank train --model linear --shipped`` (pool 50, C 1.0);
* ``gbm.json`` (ranker 'gbm'): ``kbgraph rank train --model gbm --shipped`` (pool 50, PARAMS);
* ``blend.json`` (ranker 'blend'): ``kbgraph rank train --model blend --shipped`` (pools of 50, heads of 15 by the
  shipped learned model, PARAMS with 150 trees): fit it after ``default.json``, whose order chooses the heads.

A model's ``note`` is the command without its data sets (its ``trained_on`` names them, in order), so the same
command on the same sets writes the same bytes however the sets' paths are spelled.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from kbgraph.errors import ConfigError
from kbgraph.eval.rank_train import DEFAULT_C, LabelledPool, collect_pools, fit, leave_one_out, loso_table
from kbgraph.eval.rank_train_blend import BLEND_HEAD, collect_blend_pools, fit_blend
from kbgraph.eval.rank_train_gbm import collect_gbm_pools, fit_gbm, leave_one_out_gbm
from kbgraph.query.propagation.ranking_learned import RankerModel, default_model_path
from kbgraph.query.propagation.ranking_gbm import GBMModel, default_blend_path, default_gbm_path

if TYPE_CHECKING:
    from kbgraph.eval.dataset import Dataset
    from kbgraph.eval.target import EvalTarget

#: The repo's labelled multi-hop sets (``<prefix>.questions.jsonl`` / ``.corpus.jsonl`` under examples/multihop),
#: short name -> prefix: the shipped models' training sets, in their order, and the benchmarks' sets.
REPO_SETS: Mapping[str, str] = {
    "2wiki": "2wikimultihopqa/dev500",
    "musique": "musique/hipporag_train100",
    "hotpotqa": "hotpotqa/hipporag_train100",
}
TRAIN_SETS: tuple[str, ...] = tuple(REPO_SETS.values())


class TrainParams(BaseModel):
    """The parameters of one fit: ``pool`` (``ranker_pool``: candidates per question), ``c`` (the linear model's
    inverse regularisation), ``head`` (the blend's head size); ``limit``: only the first questions of each set."""

    pool: int = Field(50, ge=1)
    c: float = Field(DEFAULT_C, gt=0)
    head: int = Field(BLEND_HEAD, ge=1)
    limit: int | None = Field(None, ge=1)


#: The parameters of every shipped model (the pool is ``ranker_pool``'s default).
SHIPPED = TrainParams()
#: Settings the shipped models' pools were collected under where the default has moved since they were fitted:
#: the document cards (``weight_document_text``, 0.05 since; docs/scoring.md) came after them. ``--shipped`` applies
#: these, so the rebuild is byte for byte.
SHIPPED_SETTINGS: Mapping[str, object] = {"weight_document_text": 0.0}

Pools = dict[str, list[LabelledPool]]
Model = RankerModel | GBMModel


@dataclass(frozen=True)
class Trainer:
    """One ``kbgraph rank train --model``: ``collect`` (kb, data set, params, log) -> the labelled pools of one set;
    ``fit`` (pools by set, params) -> the model; ``table`` (pools by set, params) -> the recall table of
    kbgraph.eval.rank_train ``loso_table``; ``options`` (params) -> the command-line options the model's note
    records; ``shipped`` -> the shipped file it rebuilds; ``use``: how a fitted file is used at query time."""

    model: str
    collect: Callable[[EvalTarget, Dataset, TrainParams, Callable[[str], None] | None], list[LabelledPool]]
    fit: Callable[[Pools, TrainParams], Model]
    table: Callable[[Pools, TrainParams], dict[str, dict[str, dict[str, float]]]]
    options: Callable[[TrainParams], str]
    shipped: Callable[[], Path]
    use: str

    def note(self, params: TrainParams) -> str:
        """The command that fits this model with ``params`` on the sets of its ``trained_on``."""
        limit = f" --limit {params.limit}" if params.limit else ""
        return f"kbgraph rank train --model {self.model} {self.options(params)}{limit}"

    def train(self, by_set: Pools, params: TrainParams) -> Model:
        """The model fitted on ``by_set`` with ``params``, its ``trained_on`` the sets' names in order and its
        ``note`` the command (:meth:`note`)."""
        model = self.fit(by_set, params)
        model.trained_on = list(by_set)
        model.note = self.note(params)
        return model


_ROWS = (
    Trainer(
        "linear",
        lambda kb, ds, p, log: collect_pools(kb, ds, pool=p.pool, limit=p.limit, log=log),
        lambda sets, p: fit(sets, pool=p.pool, c=p.c),
        lambda sets, p: leave_one_out(sets, pool=p.pool, c=p.c),
        lambda p: f"--pool {p.pool} --c {p.c}",
        default_model_path,
        "KBGRAPH_RANKER_MODEL=<file> KBGRAPH_RANKER=learned",
    ),
    Trainer(
        "gbm",
        lambda kb, ds, p, log: collect_gbm_pools(kb, ds, pool=p.pool, limit=p.limit, log=log),
        lambda sets, p: fit_gbm(sets, pool=p.pool),
        lambda sets, p: leave_one_out_gbm(sets, pool=p.pool),
        lambda p: f"--pool {p.pool}",
        default_gbm_path,
        "KBGRAPH_RANKER_MODEL=<file> KBGRAPH_RANKER=gbm",
    ),
    Trainer(
        "blend",
        lambda kb, ds, p, log: collect_blend_pools(kb, ds, pool=p.pool, size=p.head, limit=p.limit, log=log),
        lambda sets, p: fit_blend(sets, head=p.head),
        lambda sets, p: loso_table(sets, lambda part: fit_blend(part, head=p.head)),
        lambda p: f"--pool {p.pool} --head {p.head}",
        default_blend_path,
        "the blend ranker reads the shipped file only: copy it over kbgraph/resources/ranker/blend.json",
    ),
)
#: ``--model`` -> its trainer.
TRAINERS: Mapping[str, Trainer] = {row.model: row for row in _ROWS}


def get_trainer(model: str) -> Trainer:
    """The trainer of ``--model`` ``model``. Raises ConfigError naming the choices."""
    row = TRAINERS.get(model)
    if row is None:
        raise ConfigError(f"--model {model!r}: choose one of {', '.join(TRAINERS)}")
    return row


def repo_sets(root: Path | None = None) -> list[Path]:
    """The paths (prefixes) of :data:`TRAIN_SETS` under ``root`` (default: examples/multihop of the checkout this
    package runs from). Raises ConfigError when they are not there (an installed package has no examples/)."""
    base = root if root is not None else Path(__file__).resolve().parents[2] / "examples" / "multihop"
    paths = [base / prefix for prefix in TRAIN_SETS]
    missing = [p for p in paths if not p.with_name(p.name + ".questions.jsonl").is_file()]
    if missing:
        raise ConfigError(
            f"the repo's training sets are not under {base} (missing {', '.join(map(str, missing))}): "
            "--shipped needs a checkout of kbgraph; give the sets with --dataset instead"
        )
    return paths


def check_order(names: Sequence[str]) -> None:
    """Raises ConfigError unless ``names`` (data set names) are :data:`TRAIN_SETS`' in order: a shipped model is
    rebuilt only from its own sets."""
    want = [prefix.replace("/", "_") for prefix in TRAIN_SETS]
    if list(names) != want:
        raise ConfigError(f"a shipped model is fitted on {', '.join(want)} in that order, not {', '.join(names)}")
