"""The ranker registry (kbgraph.query.propagation.rankers) as the one seam of a ranker: its names are the setting ``ranker``'s
(the ``Literal`` of kbgraph.settings_groups, which cannot import the registry), a toy ranker added as one row
orders propagation's pool and identifies a run, and every row's capabilities agree with its functions."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import pytest

from kbgraph.errors import QueryError
from kbgraph.eval import runfolder
from kbgraph.query.propagation import rankers
from kbgraph.query.models import RankerTerm
from kbgraph.query.propagation.ranking_learned import Candidate, default_model_path
from kbgraph.query.propagation.rankers import DEFAULT_RANKER, RANKERS, RankerRow, get_ranker, learned_order
from kbgraph.settings import Settings
from kbgraph.settings_retrieval import RetrievalSettings


def test_the_setting_names_the_registry_s_rankers() -> None:
    literal = get_args(RetrievalSettings.model_fields["ranker"].annotation)
    assert set(literal) == set(RANKERS), (
        "the setting ranker's Literal and kbgraph.query.propagation.rankers.RANKERS differ"
    )
    assert RetrievalSettings.model_fields["ranker"].default == DEFAULT_RANKER
    assert rankers.rankers_help() == " | ".join(RANKERS)


def test_unknown_ranker_names_the_choices() -> None:
    with pytest.raises(QueryError, match="learned, weights, gbm, blend"):
        get_ranker("nope")


def test_rows_hold_their_capabilities() -> None:
    for row in RANKERS.values():
        assert row.needs_pool == (row.order is not None)
        assert not row.reads_texts or row.needs_pool, row.name  # texts are the pool's
        assert row.describe(Settings(ranker=row.name))[0].startswith(f"ranker: {row.name}")
        assert all(isinstance(p, Path) for p in row.models(Settings(ranker=row.name)))
    assert not get_ranker("weights").models(Settings())  # the weighted sum reads no model
    assert get_ranker("learned").models(Settings()) == (default_model_path(),)
    assert len({row.train_model for row in RANKERS.values() if row.train_model}) == sum(
        1 for row in RANKERS.values() if row.train_model
    )  # one ranker per `kbgraph rank train --model`


def _toy_order(
    store: Any, settings: Settings, question: str, pool: Any, k: int, explain: bool
) -> tuple[list[str], dict[str, float], dict[str, list[RankerTerm]]]:
    ids = sorted(pool.ids, reverse=True)[:k]  # the reverse of the ids
    return ids, {cid: float(-i) for i, cid in enumerate(ids)}, {}


def test_a_new_ranker_is_its_order_and_one_row(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A toy row: the run identity hashes the model it names and keeps its settings; its order is the one the row
    holds (propagation calls ``get_ranker(settings.retrieval.ranker).order``)."""
    model = tmp_path / "toy.json"
    model.write_text("{}")
    row = RankerRow(
        "toy", "a toy ranker", _toy_order, lambda s: ["ranker: toy"], lambda s: (model,), lambda s: {"toy_k": 3}
    )
    monkeypatch.setitem(RANKERS, "toy", row)
    settings = Settings()
    object.__setattr__(settings.retrieval, "ranker", "toy")  # past the Literal, as a new name would be added to it
    got = runfolder.ranker_identity(settings)
    assert got["ranker"] == "toy" and got["toy_k"] == 3
    assert got["model_sha256"] == runfolder._sha256(model)
    order = get_ranker("toy").order
    assert order is not None
    pool = type("Pool", (), {"ids": ["a", "b", "c"]})()
    assert order(None, settings, "q", pool, 2, False)[0] == ["c", "b"]  # type: ignore[arg-type]


def test_the_learned_order_is_public_and_ranks_by_the_model() -> None:
    pool_ids = ["a", "b"]
    pool = type(
        "Pool",
        (),
        {
            "ids": pool_ids,
            "candidates": [
                Candidate(terms={"Chunk": (0.2, 1.0)}, weighted=0.2),
                Candidate(terms={"Chunk": (0.9, 1.0)}, weighted=0.9),
            ],
        },
    )()
    top, scores, ranking = learned_order(None, Settings(), "q", pool, 2, True)  # type: ignore[arg-type]
    assert set(top) == {"a", "b"} and scores[top[0]] >= scores[top[1]] and set(ranking) == {"a", "b"}
    assert get_ranker("learned").order is learned_order
