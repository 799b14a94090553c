"""The one list of the rankers of score propagation: ``RANKERS``, name -> row, read by propagation (which orders
the candidates, kbgraph.query.propagation.propagate), the seeding (BM25's hits join the pool of a ranker that has one,
kbgraph.query.propagation.seeding), the knowledge base (the BM25 index warmed after an ingestion, kbgraph.kb), ``kbgraph rank``
(kbgraph.cli.rank) and an evaluation's run identity (kbgraph.eval.runfolder). Adding a ranker = its order function
(a module of this package) + one row here (+ its name in the setting ``ranker``'s ``Literal``, kbgraph.settings_groups
``RetrievalSettings``, which a test holds to this list: the settings sit below this package in the import layers of
pyproject.toml and cannot read the registry).

What a reader of a ranker needs to know is a capability on its row, never a test of its name (a test,
tests/unit/test_ranker_names.py, fails on a ranker's name compared outside this module):

* ``order``: the function that orders the learned pool (:class:`RankerOrder`); None for ``weights``, which keeps the
  weighted sum's own order and so needs no pool (``needs_pool``);
* ``reads_texts``: it reads the candidates' texts (the gbm's list features), so the pool carries the adjacency's
  reader of them (kbgraph.query.propagation.propagate ``learned_pool``);
* ``models``: the model files it reads under the settings given (the run identity hashes them);
  ``identity``: the other settings that define its order, as the run identity names them;
* ``describe``: the lines ``kbgraph rank show`` prints of it; ``train_model``: the ``kbgraph rank train --model``
  that fits its model (None: none does).

The rankers (docs/scoring.md): 'learned' (the default), the linear model over propagation's terms
(kbgraph.query.propagation.ranking_learned); 'weights', the weighted sum of the ``weight_*`` settings; 'gbm', gradient-boosted trees
over the same terms and list features (kbgraph.query.propagation.ranking_gbm); 'blend', the learned ranker's order, its head
re-ordered by the learned and gbm scores (kbgraph.query.propagation.ranking_blend).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kbgraph.errors import QueryError
from kbgraph.query.models import RankerTerm
from kbgraph.query.propagation.ranking_learned import default_model_path, learned_order, load_model
from kbgraph.query.propagation.ranking_blend import blend_order
from kbgraph.query.propagation.ranking_gbm import default_blend_path, default_gbm_path, gbm_order, load_gbm_model
from kbgraph.settings import Settings
from kbgraph.store import GraphStore

if TYPE_CHECKING:
    from kbgraph.query.propagation.propagate import LearnedPool

__all__ = [
    "DEFAULT_RANKER",
    "RANKERS",
    "RankerOrder",
    "RankerRow",
    "blend_order",
    "get_ranker",
    "gbm_order",
    "learned_order",
    "rankers_help",
]

#: The ranker of the setting ``ranker``'s default.
DEFAULT_RANKER = "blend"


class RankerOrder(Protocol):
    """A ranker's order of the learned pool: (its top ``k`` chunk ids, {chunk id: score}, {chunk id: the terms of
    its score, when ``explain``}), best first."""

    def __call__(
        self, store: GraphStore, settings: Settings, question: str, pool: LearnedPool, k: int, explain: bool, /
    ) -> tuple[list[str], dict[str, float], dict[str, list[RankerTerm]]]: ...


def _no_models(settings: Settings) -> tuple[Path, ...]:
    return ()


def _no_identity(settings: Settings) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class RankerRow:
    """One ranker of the registry (the module's docstring says what each field is for)."""

    name: str
    summary: str
    order: RankerOrder | None
    describe: Callable[[Settings], list[str]]
    models: Callable[[Settings], tuple[Path, ...]] = _no_models
    identity: Callable[[Settings], dict[str, Any]] = _no_identity
    reads_texts: bool = False
    train_model: str | None = None

    @property
    def needs_pool(self) -> bool:
        """Whether it re-orders the learned pool (kbgraph.query.propagation.propagate ``learned_pool``, BM25's hits in it)."""
        return self.order is not None


def _linear_model(settings: Settings) -> tuple[Path, ...]:
    return (Path(settings.retrieval.ranker_model or default_model_path()),)


def _gbm_model(settings: Settings) -> tuple[Path, ...]:
    return (Path(settings.retrieval.ranker_model or default_gbm_path()),)


def _blend_models(settings: Settings) -> tuple[Path, ...]:
    return default_model_path(), default_blend_path()  # the shipped ones: ranker_model names one model


def _blend_identity(settings: Settings) -> dict[str, Any]:
    return {"blend_weight": settings.retrieval.ranker_blend_weight, "blend_k": settings.retrieval.ranker_blend_k}


def _describe_linear(settings: Settings) -> list[str]:
    """The linear model in use (for 'learned', and for 'weights' the one 'learned' would use): its features' weights."""
    path = settings.retrieval.ranker_model or default_model_path()
    model = load_model(path)
    return [
        f"ranker: {settings.retrieval.ranker}; model {path}; fitted on {', '.join(model.trained_on) or '?'}; "
        f"pool {model.pool}",
        *(
            f"  {name:14} {w:+.3f} (per unit {w / s:+.3f})"
            for name, w, s in zip(model.features, model.coef, model.scale, strict=True)
        ),
    ]


def _describe_gbm(settings: Settings) -> list[str]:
    path = settings.retrieval.ranker_model or default_gbm_path()
    trees = load_gbm_model(path)
    return [
        f"ranker: gbm; model {path}; fitted on {', '.join(trees.trained_on) or '?'}; pool {trees.pool}; "
        f"{len(trees.trees)} trees; splits per feature:",
        *(f"  {name:22} {n}" for name, n in sorted(trees.split_counts().items(), key=lambda kv: -kv[1])),
    ]


def _describe_blend(settings: Settings) -> list[str]:
    r = settings.retrieval
    return [
        f"ranker: blend = z(learned) + {r.ranker_blend_weight} x z(gbm) over the learned ranker's best "
        f"{r.ranker_blend_k} (0: all), the shipped models {default_model_path()} and {default_blend_path()}"
    ]


_ROWS: list[RankerRow] = [
    RankerRow(
        "learned",
        "the linear model over propagation's score terms (ranker_model; kbgraph.query.propagation.ranking_learned)",
        learned_order,
        _describe_linear,
        _linear_model,
        train_model="linear",
    ),
    RankerRow("weights", "the weighted sum of the weight_* settings", None, _describe_linear),
    RankerRow(
        "gbm",
        "gradient-boosted trees over the score terms and list features (kbgraph.query.propagation.ranking_gbm)",
        gbm_order,
        _describe_gbm,
        _gbm_model,
        reads_texts=True,
        train_model="gbm",
    ),
    RankerRow(
        "blend",
        "the learned order, its head re-ordered by the learned and gbm scores "
        "(kbgraph.query.propagation.ranking_blend)",
        blend_order,
        _describe_blend,
        _blend_models,
        _blend_identity,
        reads_texts=True,
        train_model="blend",
    ),
]
RANKERS: dict[str, RankerRow] = {row.name: row for row in _ROWS}


def get_ranker(name: str) -> RankerRow:
    """The ranker called ``name``, looked up in ``RANKERS``. Raises QueryError naming the choices (the setting
    ``ranker`` is validated against the same names, so a ranker of the settings is always found)."""
    row = RANKERS.get(name)
    if row is None:
        raise QueryError(f"unknown ranker {name!r}; choose one of {', '.join(RANKERS)}")
    return row


def rankers_help() -> str:
    """The ranker names for a help text: ``"learned | weights | gbm | blend"``."""
    return " | ".join(RANKERS)


if TYPE_CHECKING:  # an order function that does not fit RankerOrder is a type error (warn_unused_ignores)
    RankerRow("wrong", "", _no_models, _describe_linear)  # type: ignore[arg-type]
