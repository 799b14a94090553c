"""The gbm ranker (kbgraph.query.propagation.ranking_gbm, kbgraph.query.propagation.ranking_lists) on a planted pool, no store: its list
features equal values worked out by hand, and its scores equal an independent recomputation (each tree walked
from the model's JSON, node by node, over the hand-worked features); the shipped model scores as its own JSON
says; its explanation adds up to its score; a broken model is a clear error."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbgraph.errors import ConfigError
from kbgraph.query.propagation.ranking_learned import Candidate
from kbgraph.query.propagation.ranking_gbm import GBMModel, default_gbm_path, load_gbm_model
from kbgraph.query.propagation.ranking_lists import GBM_FEATURES, list_rows, names, question_stems

COL = {name: i for i, name in enumerate(GBM_FEATURES)}
QUESTION = "Who directed the film Blade Runner (1982)?"


def pool() -> tuple[list[Candidate], list[str]]:
    """Four candidates, best first by the weighted sum: the film's first chunk (named by the question, BM25's
    best), the director's passage (reached by a hop: the bridge), the film's second chunk, and another film of
    the director's (BM25's second)."""
    cands = [
        Candidate(terms={"Chunk": (0.8, 1.0)}, title="Blade Runner (film)", weighted=0.9, bm25=1.0, bm25_rank=0),
        Candidate(terms={"Chunk": (0.5, 1.0), "Hop": (0.6, 0.5)}, title="Ridley Scott", weighted=0.6),
        Candidate(terms={"Chunk": (0.3, 1.0)}, title="Blade Runner (film)", weighted=0.3),
        Candidate(terms={"FullText": (0.4, 1.0)}, title="Alien (film)", weighted=0.2, bm25=0.5, bm25_rank=1),
    ]
    texts = [
        "Blade Runner is a 1982 film directed by Ridley Scott.",
        "Ridley Scott is an English director. He directed Alien.",
        "The film was released in 1982.",
        "Alien is a film by Ridley Scott and Fox.",
    ]
    return cands, texts


#: The list features worked out by hand (module docstring of kbgraph.query.propagation.ranking_lists). Anchors: q = the two
#: Blade Runner chunks (0, 2); chunk and weighted = 0, 1, 2; bm25 = 0, 3. Names: 0 {Blade, Runner, Ridley,
#: Scott}, 1 {Ridley, Scott, English, Alien}, 2 {}, 3 {Alien, Ridley, Scott, Fox}; Ridley and Scott are in 3
#: chunks (1/log2(4) = 0.5), Alien in 2 (1/log2(3)). Stems of q: direct, film, blade, runner, 1982; covered by 0
#: all five, 1 direct (director, directed), 2 four (not direct), 3 film.
HAND = {
    1: {
        "ent_q": 0.5,
        "bridge_q": 0.5,
        "named_by_q": 1.0,
        "names_q": 0.0,
        "pair_cover_q": 1.0,
        "ent_chunk": 0.5,
        "named_by_chunk": 1.0,
        "pair_cover_chunk": 1.0,
        "ent_bm25": 1 / math.log2(3),
        "bridge_bm25": 1 / math.log2(3),
        "named_by_bm25": 1.0,
        "names_bm25": 1.0,
        "pair_cover_bm25": 1.0,
        "q_names": 0.0,
        "q_cover": 0.2,
        "doc_rank": 0.0,
        "rank_Hop": 1.0,
    },
    0: {
        "ent_q": 0.0,
        "named_by_q": 0.0,
        "pair_cover_q": 0.0,
        "ent_chunk": 0.5,
        "named_by_chunk": 0.0,
        "names_chunk": 1.0,
        "q_names": 0.5,
        "q_cover": 1.0,
        "doc_rank": 0.0,
        "rank_Hop": 0.0,
    },
    2: {"named_by_q": 0.0, "pair_cover_chunk": 1.0, "q_cover": 0.8, "doc_rank": 1.0, "q_names": 0.0},
    3: {
        "ent_bm25": 0.5,
        "bridge_bm25": 0.5,
        "names_bm25": 0.0,
        "named_by_bm25": 0.0,
        "pair_cover_bm25": 1.0,
        "named_by_q": 0.0,
        "q_cover": 0.2,
        "rank_FullText": 1.0,
        "doc_rank": 0.0,
    },
}


def test_names_and_stems() -> None:
    assert names("Ridley Scott is an English director. He directed Alien's Fox-Studio sequel.") == {
        "Ridley",
        "Scott",
        "English",
        "Alien",
        "Fox-Studio",
    }
    assert names("The film was released in 1982.") == set()  # a capitalised stop word is no name
    assert question_stems(QUESTION) == ["direct", "film", "blade", "runner", "1982"]


def test_list_features_of_a_planted_pool() -> None:
    cands, texts = pool()
    rows = list_rows(QUESTION, cands, texts)
    assert rows.shape == (4, len(GBM_FEATURES))
    for i, expected in HAND.items():
        for name, value in expected.items():
            assert rows[i, COL[name]] == pytest.approx(value), (i, name)
    assert rows[:, COL["title_in_q"]].tolist() == [1.0, 0.0, 1.0, 0.0]  # the linear ranker's features come first
    assert list_rows(QUESTION, [], []).shape == (0, len(GBM_FEATURES))


def _tree(
    feature: list[int], threshold: list[float], left: list[int], right: list[int], value: list[float]
) -> dict[str, list[Any]]:
    return {"feature": feature, "threshold": threshold, "left": left, "right": right, "value": value}


#: Three planted trees over three features: named_by_q, then q_cover; Chunk; a single leaf.
PLANTED: dict[str, Any] = {
    "features": ["named_by_q", "q_cover", "Chunk"],
    "intercept": 0.1,
    "trees": [
        _tree(
            [0, -1, 1, -1, -1], [0.5, 0, 0.5, 0, 0], [1, -1, 3, -1, -1], [2, -1, 4, -1, -1], [0.0, -0.2, 0.2, 0.3, 0.1]
        ),
        _tree([2, -1, -1], [0.6, 0, 0], [1, -1, -1], [2, -1, -1], [0.2, 0.0, 0.4]),
        _tree([-1], [0.0], [-1], [-1], [0.05]),
    ],
}


def _walk(model: dict[str, Any], x: dict[str, float]) -> float:
    """The score of features ``x`` ({name: value}) by the model's JSON, each tree walked node by node."""
    total = float(model.get("intercept", 0.0))
    for t in model["trees"]:
        i = 0
        while t["feature"][i] >= 0:
            i = t["left"][i] if x[model["features"][t["feature"][i]]] <= t["threshold"][i] else t["right"][i]
        total += t["value"][i]
    return total


def test_planted_trees_score_as_an_independent_walk_over_hand_worked_features() -> None:
    cands, texts = pool()
    model = GBMModel.model_validate(PLANTED)
    scores = model.score(list_rows(QUESTION, cands, texts))
    hand = [
        {"named_by_q": HAND[i]["named_by_q"], "q_cover": HAND[i]["q_cover"], "Chunk": c.terms.get("Chunk", (0, 1))[0]}
        for i, c in enumerate(cands)
    ]
    assert scores.tolist() == pytest.approx([_walk(PLANTED, x) for x in hand])
    # the bridge passage (named by the passage the question names) comes first: 0.3 + 0 + 0.05 + 0.1
    assert scores.tolist() == pytest.approx([0.35, 0.45, -0.05, -0.05])


def test_the_explanation_adds_up_to_the_score() -> None:
    cands, texts = pool()
    model = GBMModel.model_validate(PLANTED)
    rows = list_rows(QUESTION, cands, texts)
    for row, score in zip(rows, model.score(rows), strict=True):
        bias, parts = model.contributions(row)
        assert [p[0] for p in parts] == PLANTED["features"]
        assert bias + sum(p[2] for p in parts) == pytest.approx(score)
    assert model.split_counts() == {"named_by_q": 1, "q_cover": 1, "Chunk": 1}


def _random_tree(rng: random.Random, n_features: int, leaves: int) -> dict[str, list[Any]]:
    """A random tree of ``leaves`` leaves (grown by splitting random leaves), preorder node arrays."""
    shape: Any = "leaf"
    for _ in range(leaves - 1):

        def grow(node: Any) -> tuple[Any, bool]:
            if node == "leaf":
                return (rng.randrange(n_features), rng.random(), "leaf", "leaf"), True
            f, thr, a, b = node
            first = rng.random() < 0.5
            a2, done = grow(a) if first else (a, False)
            if not done:
                b2, done = grow(b)
                return (f, thr, a2, b2), done
            return (f, thr, a2, b), True

        shape, _ = grow(shape)
    out: dict[str, list[Any]] = {"feature": [], "threshold": [], "left": [], "right": [], "value": []}

    def emit(node: Any) -> int:
        i = len(out["feature"])
        for key, v in zip(out, (-1, 0.0, -1, -1, rng.uniform(-1, 1)), strict=True):
            out[key].append(v)
        if node != "leaf":
            out["feature"][i], out["threshold"][i] = node[0], node[1]
            out["left"][i] = emit(node[2])
            out["right"][i] = emit(node[3])
        return i

    emit(shape)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_trees_score_as_the_walk(seed: int) -> None:
    rng = random.Random(seed)
    features = list(GBM_FEATURES[:6])
    trees = [_random_tree(rng, len(features), rng.choice([1, 2, 5, 15, 31, 63])) for _ in range(40)]
    spec: dict[str, Any] = {"features": features, "intercept": rng.uniform(-1, 1), "trees": trees}
    model = GBMModel.model_validate(spec)
    rows = np.array([[rng.random() for _ in GBM_FEATURES] for _ in range(50)])
    on_split = {f: [t["threshold"][i] for t in trees for i, g in enumerate(t["feature"]) if g == f] for f in range(6)}
    for row in rows[:10]:  # values equal to a split's threshold go left (<=)
        row[:6] = [rng.choice(on_split[f]) if on_split[f] else 0.5 for f in range(6)]
    expected = [_walk(spec, dict(zip(GBM_FEATURES, row, strict=True))) for row in rows]
    assert model.score(rows).tolist() == pytest.approx(expected, abs=1e-12)


def test_the_shipped_model_scores_as_its_json_says() -> None:
    model = load_gbm_model()
    assert set(model.features) <= set(GBM_FEATURES) and model.trees
    spec = json.loads(default_gbm_path().read_text(encoding="utf-8"))
    cands, texts = pool()
    rows = list_rows(QUESTION, cands, texts)
    expected = [_walk(spec, dict(zip(GBM_FEATURES, row, strict=True))) for row in rows]
    assert model.score(rows).tolist() == pytest.approx(expected, abs=1e-9)


def test_a_broken_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown feature"):
        GBMModel.model_validate({**PLANTED, "features": ["Nope", "q_cover", "Chunk"]})
    with pytest.raises(ValueError, match="does not list"):
        GBMModel.model_validate({**PLANTED, "features": ["q_cover"]})
    with pytest.raises(ValueError, match="node 0"):
        GBMModel.model_validate({**PLANTED, "trees": [_tree([0], [0.5], [-1], [-1], [0.0])]})
    with pytest.raises(ConfigError, match="no gbm ranker model at .*KBGRAPH_RANKER=learned"):
        load_gbm_model(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"features": ["Chunk"], "trees": [{"feature": []}]}))
    with pytest.raises(ConfigError, match="is not a gbm ranker model"):
        load_gbm_model(bad)
