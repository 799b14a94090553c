"""The shipped ranker models (kbgraph/resources/ranker/) say how the library rebuilds them, and what they say is
the library's parameters today (kbgraph.eval.rank_train_shipped): the note is the command ``kbgraph rank train``
writes with the shipped parameters, the data sets are the repo's three in order, the pool, the head and the number
of trees are the trainers'. A parameter changed without fitting and shipping the model again turns this red;
tests/test_shipped_rankers.py (slow) rebuilds each file and compares it byte for byte."""

from __future__ import annotations

import json

import pytest

from kbgraph.eval.rank_train_blend import BLEND_PARAMS
from kbgraph.eval.rank_train_gbm import PARAMS
from kbgraph.eval.rank_train_shipped import SHIPPED, TRAIN_SETS, TRAINERS, TrainParams, get_trainer
from kbgraph.errors import ConfigError
from kbgraph.query.propagation.ranking_learned import FEATURES
from kbgraph.query.propagation.ranking_lists import GBM_FEATURES

#: --model -> (pool the model records, its features, its number of trees; None: a linear model).
EXPECTED = {
    "linear": (SHIPPED.pool, list(FEATURES), None),
    "gbm": (SHIPPED.pool, list(GBM_FEATURES), PARAMS["n_estimators"]),
    "blend": (SHIPPED.head, list(GBM_FEATURES), {**PARAMS, **BLEND_PARAMS}["n_estimators"]),
}


@pytest.mark.parametrize("model", sorted(TRAINERS))
def test_a_shipped_model_records_the_command_that_rebuilds_it(model: str) -> None:
    trainer = TRAINERS[model]
    shipped = json.loads(trainer.shipped().read_text(encoding="utf-8"))
    pool, features, trees = EXPECTED[model]
    assert shipped["note"] == trainer.note(SHIPPED)
    assert shipped["trained_on"] == [prefix.replace("/", "_") for prefix in TRAIN_SETS]
    assert shipped["pool"] == pool and shipped["features"] == features
    if trees is None:
        assert len(shipped["coef"]) == len(features)
    else:
        assert len(shipped["trees"]) == trees


def test_the_notes_name_every_parameter() -> None:
    assert TRAINERS["linear"].note(SHIPPED) == "kbgraph rank train --model linear --pool 50 --c 1.0"
    assert TRAINERS["gbm"].note(SHIPPED) == "kbgraph rank train --model gbm --pool 50"
    assert (
        TRAINERS["blend"].note(TrainParams(pool=40, head=10, limit=5))
        == "kbgraph rank train --model blend --pool 40 --head 10 --limit 5"
    )


def test_an_unknown_model_names_the_choices() -> None:
    with pytest.raises(ConfigError, match="linear, gbm, blend"):
        get_trainer("tree")


def test_every_model_the_ranker_registry_names_has_a_trainer() -> None:
    from kbgraph.query.propagation.rankers import RANKERS

    named = {row.train_model for row in RANKERS.values() if row.train_model}
    assert named and named <= set(TRAINERS), f"RankerRow.train_model without a trainer: {named - set(TRAINERS)}"
