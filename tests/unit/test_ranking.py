"""The learned ranker's features and linear scoring on a planted pool (kbgraph.query.propagation.ranking_learned): no store."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbgraph.errors import ConfigError
from kbgraph.query.propagation.ranking_learned import (
    FEATURES,
    Candidate,
    RankerModel,
    default_model_path,
    feature_rows,
    load_model,
    score_rows,
    title_in_question,
)
from kbgraph.text import strip_disambiguator

COL = {name: i for i, name in enumerate(FEATURES)}
QUESTION = "Who directed the film Blade Runner (1982)?"


def pool() -> list[Candidate]:
    """Three candidates, best first by the weighted sum: a strong chunk, a titled one, a BM25-only one."""
    return [
        Candidate(terms={"Chunk": (0.8, 1.0), "Hop": (0.4, 0.5)}, title="Alien", weighted=0.9),
        Candidate(terms={"Chunk": (0.6, 1.0)}, title="Blade Runner (film)", weighted=0.6, bm25=1.0, bm25_rank=0),
        Candidate(terms={"FullText": (0.5, 1.0)}, title="Ridley Scott", weighted=0.025, bm25=0.4, bm25_rank=3),
    ]


def test_feature_rows_of_a_planted_pool() -> None:
    rows = feature_rows(QUESTION, pool())
    assert rows.shape == (3, len(FEATURES))
    assert rows[:, COL["Chunk"]].tolist() == [0.8, 0.6, 0.0]
    assert rows[0, COL["Hop"]] == pytest.approx(0.2)  # similarity x factor
    assert rows[:, COL["has_chunk"]].tolist() == [1.0, 1.0, 0.0]
    assert rows[:, COL["title_in_q"]].tolist() == [0.0, 1.0, 0.0]
    assert rows[:, COL["rank_weighted"]].tolist() == [1.0, 0.5, pytest.approx(1 / 3)]
    assert rows[:, COL["rank_chunk"]].tolist() == [1.0, 0.5, pytest.approx(1 / 3)]
    assert rows[:, COL["gap_chunk"]].tolist() == pytest.approx([0.0, -0.2, -0.8])
    assert rows[:, COL["gap_weighted"]].tolist() == pytest.approx([0.0, -0.3, -0.875])
    assert rows[:, COL["bm25"]].tolist() == [0.0, 1.0, 0.4]
    assert rows[:, COL["rank_bm25"]].tolist() == [0.0, 1.0, 0.25]


def test_an_empty_pool_has_no_rows() -> None:
    assert feature_rows(QUESTION, []).shape == (0, len(FEATURES))
    model = RankerModel(features=["Chunk"], mean=[0.0], scale=[1.0], coef=[1.0])
    assert score_rows(model, np.zeros((0, len(FEATURES)))).shape == (0,)


@pytest.mark.parametrize(
    "title, question, found",
    [
        ("Blade Runner (film)", "Who directed Blade Runner?", True),
        ("blade runner", "WHO DIRECTED BLADE RUNNER?", True),
        ("Blade", "Who directed Bladerunner?", False),  # word boundaries
        ("X", "X marks the spot", False),  # a one-character title never counts
        ("", "anything", False),
        ("C++", "Who designed C++?", True),  # regex characters are literal
        ("La La", "Ola La La?", True),  # an occurrence overlapping one without a boundary still counts
    ],
)
def test_title_in_question(title: str, question: str, found: bool) -> None:
    assert title_in_question(title, question) is found


#: Text with word characters, boundaries and the characters lower() changes: titles hit often.
_TEXT = st.text(alphabet="ab_ 1é+(-)İ.", max_size=12)


@given(title=_TEXT, before=_TEXT, after=_TEXT)
def test_title_in_question_reads_word_boundaries_as_the_regex_does(title: str, before: str, after: str) -> None:
    """The scan (no pattern compiled per title) equals the word-boundary regex it replaced, title planted or not."""
    for question in (before + title + after, before + after):
        t = strip_disambiguator(title).lower()
        regex = len(t) >= 2 and re.search(r"(?<!\w)" + re.escape(t) + r"(?!\w)", question.lower()) is not None
        assert title_in_question(title, question) is regex


def test_the_linear_score_is_the_sum_of_its_contributions() -> None:
    model = RankerModel(
        features=["Chunk", "title_in_q", "bm25"],
        mean=[0.5, 0.1, 0.2],
        scale=[0.2, 0.3, 0.4],
        coef=[1.0, 2.0, 0.5],
        intercept=-1.0,
    )
    rows = feature_rows(QUESTION, pool())
    scores = score_rows(model, rows)
    for i, row in enumerate(rows):
        contributions = model.contributions(row)
        assert [c[0] for c in contributions] == ["Chunk", "title_in_q", "bm25"]
        assert scores[i] == pytest.approx(model.intercept + sum(c[2] for c in contributions))
    # the titled chunk and BM25's best hit outranks the one with the better chunk similarity
    assert int(np.argmax(scores)) == 1


def test_a_ranker_model_is_validated() -> None:
    with pytest.raises(ValueError, match="same length"):
        RankerModel(features=["Chunk"], mean=[0.0, 1.0], scale=[1.0], coef=[1.0])
    with pytest.raises(ValueError, match="unknown feature"):
        RankerModel(features=["Nope"], mean=[0.0], scale=[1.0], coef=[1.0])
    with pytest.raises(ValueError, match="scale"):
        RankerModel(features=["Chunk"], mean=[0.0], scale=[0.0], coef=[1.0])


def test_load_model_names_the_file_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no ranker model at .*KBGRAPH_RANKER=weights"):
        load_model(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"features": ["Chunk"], "mean": [], "scale": [1.0], "coef": [1.0]}))
    with pytest.raises(ConfigError, match="is not a ranker model"):
        load_model(bad)


def test_the_shipped_model_loads_and_uses_known_features() -> None:
    model = load_model()
    assert model.features and set(model.features) <= set(FEATURES)
    assert load_model(default_model_path()) == model
