"""Learned ranking over the score terms of propagation (setting ``ranker=learned``, the default).

Score propagation (kbgraph.query.propagation.propagate, PIKE-RAG §5.2.3) gives every candidate chunk one term per layer
(Chunk, AtomicQuestion, Triple, Entity, EntityText, FullText, Section, Document, Tag, Hop, TitleHop, Next,
TripleHop). The
``weights`` ranker adds them with the hand-set ``weight_*`` settings. The ``learned`` ranker re-orders the best
``ranker_pool`` chunks of that sum by a linear model fitted on labelled questions (``kbgraph rank train``,
kbgraph.eval.rank_train): a logistic regression of "this chunk's passage is gold" over the features below,
standardised. Its score is

    r(c) = b + Σ_i w_i · (x_i(c) - μ_i) / σ_i

so every feature's contribution w_i · (x_i - μ_i) / σ_i is exact and ``--explain`` prints it
(``ScoredChunk.ranking``). The features of a chunk c in a pool P of candidates for question q:

=================  ============================================================================================
``<Layer>``        the layer's unweighted term: similarity × factor (0 without one), for each of ``LAYERS``
``has_chunk``      1 if c has its exact question similarity (a Chunk seed or rescored), else 0
``title_in_q``     1 if the title of c's document (without a trailing "(...)" disambiguator) appears in q
                   on word boundaries, case-insensitive, else 0 (the passage the question names outright)
``rank_weighted``  1 / (1 + rank of c in P by the weighted sum), rank 0 = best
``rank_chunk``     1 / (1 + rank of c in P by its Chunk similarity)
``weighted``       the weighted sum itself (the ``weights`` ranker's score)
``gap_chunk``      Chunk similarity of c minus the best Chunk similarity in P (<= 0)
``gap_weighted``   weighted sum of c minus the best weighted sum in P (<= 0)
``bm25``           BM25 score of c for q over the best BM25 score of q (in [0, 1]; 0 outside BM25's top
                   ``ranker_bm25_k``), from the knowledge base's BM25 index (kbgraph.query.bm25)
``rank_bm25``      1 / (1 + rank of c in BM25's top ``ranker_bm25_k``), 0 outside it
=================  ============================================================================================

BM25's top ``ranker_bm25_k`` chunks join the pool when the weighted sum left them out (with their exact
Chunk similarity): a lexical match, such as a passage that repeats the question's dates and places, is ranked
by the model even when no layer of propagation reached it.

Relative features (ranks and gaps) make the model indifferent to a corpus's similarity scale, which is what
lets a model fitted on two data sets rank the third (leave-one-set-out figures in docs/benchmarks.md#recall-per-method).

The model is a JSON file (:class:`RankerModel`): the shipped one is package data
(``kbgraph/resources/ranker/default.json``), a user's own is named by the setting ``ranker_model``.
Scoring needs only numpy; fitting needs scikit-learn (the ``eval`` extra).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np
from pydantic import BaseModel, Field, ValidationError, model_validator

from kbgraph.errors import ConfigError
from kbgraph.query.models import RankerTerm
from kbgraph.text import contains_phrase, strip_disambiguator
from kbgraph.resources import resource

if TYPE_CHECKING:
    from kbgraph.query.propagation.propagate import LearnedPool
    from kbgraph.settings import Settings
    from kbgraph.store import GraphStore

#: Score terms of propagation, in feature order (kbgraph.query.propagation.propagate's layer names).
LAYERS = (
    "Chunk",
    "AtomicQuestion",
    "Triple",
    "Entity",
    "EntityText",
    "FullText",
    "Section",
    "Document",
    "Tag",
    "Hop",
    "TitleHop",
    "Next",
    "TripleHop",
)
#: Every feature, in the order of a feature row.
FEATURES = (
    *LAYERS,
    "has_chunk",
    "title_in_q",
    "rank_weighted",
    "rank_chunk",
    "weighted",
    "gap_chunk",
    "gap_weighted",
    "bm25",
    "rank_bm25",
)

M = TypeVar("M", bound=BaseModel)


class Candidate(BaseModel):
    """A candidate chunk of the pool: ``terms`` {layer: (similarity, factor)} of propagation, the title of its
    document, its weighted sum (``weights`` ranker score), and its BM25 score over the question's best
    (``bm25``, in [0, 1]) and rank (``bm25_rank``, 0 = best) when it is among BM25's top hits (else 0 / None)."""

    terms: dict[str, tuple[float, float]]
    title: str = ""
    weighted: float
    bm25: float = 0.0
    bm25_rank: int | None = None


class RankerModel(BaseModel):
    """A fitted linear ranker: ``features`` (names, a subset of :data:`FEATURES` in any order), their means
    ``mean`` and scales ``scale`` (> 0) and coefficients ``coef`` (one per feature), the ``intercept``, and
    what it was fitted on (``trained_on``: data set names; ``pool``: the pool size it saw)."""

    features: list[str]
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float = 0.0
    pool: int = Field(50, ge=1)
    trained_on: list[str] = Field(default_factory=list)
    note: str = ""

    @model_validator(mode="after")
    def _check(self) -> RankerModel:
        n = len(self.features)
        if not (len(self.mean) == len(self.scale) == len(self.coef) == n) or n == 0:
            raise ValueError(
                f"features, mean, scale and coef must have the same length (> 0), got "
                f"{n}, {len(self.mean)}, {len(self.scale)}, {len(self.coef)}"
            )
        unknown = [f for f in self.features if f not in FEATURES]
        if unknown:
            raise ValueError(f"unknown feature(s) {', '.join(unknown)}; known: {', '.join(FEATURES)}")
        if any(s <= 0 for s in self.scale):
            raise ValueError("every scale must be > 0")
        return self

    def weights(self) -> tuple[np.ndarray, float]:
        """(w / σ over :data:`FEATURES`, 0 for a feature the model does not use; intercept b - Σ w μ / σ): the
        same linear function on raw feature rows."""
        full = np.zeros(len(FEATURES))
        bias = self.intercept
        for name, m, s, w in zip(self.features, self.mean, self.scale, self.coef, strict=True):
            full[FEATURES.index(name)] += w / s
            bias -= w * m / s
        return full, bias

    def contributions(self, row: np.ndarray) -> list[tuple[str, float, float]]:
        """[(feature, value, w·(x-μ)/σ)] of one feature row (len(FEATURES) floats), in the model's order; their
        sum plus ``intercept`` is the ranker's score."""
        return [
            (name, float(row[FEATURES.index(name)]), w * (float(row[FEATURES.index(name)]) - m) / s)
            for name, m, s, w in zip(self.features, self.mean, self.scale, self.coef, strict=True)
        ]


def title_in_question(title: str, question: str) -> bool:
    """True if ``title`` (without a trailing '(...)' disambiguator, at least 2 characters) appears in
    ``question`` on word boundaries, case-insensitive."""
    t = strip_disambiguator(title or "").lower()
    q = question.lower()
    # as re.search(r"(?<!\w)" + re.escape(t) + r"(?!\w)", q), without a pattern per title (they overflowed re's cache)
    return len(t) >= 2 and contains_phrase(q, t, word=_word)


def _word(ch: str) -> bool:
    """Whether ``ch`` is a word character as re's ``\\w`` reads it (str patterns): alphanumeric or '_'."""
    return ch.isalnum() or ch == "_"


def feature_rows(question: str, pool: Sequence[Candidate]) -> np.ndarray:
    """float64 (len(pool), len(FEATURES)): the feature rows of the pool's candidates, in pool order (the pool
    must be sorted best first by the weighted sum; ranks are positions in it)."""
    n = len(pool)
    out = np.zeros((n, len(FEATURES)))
    if n == 0:
        return out
    chunk = np.array([c.terms["Chunk"][0] * c.terms["Chunk"][1] if "Chunk" in c.terms else 0.0 for c in pool])
    weighted = np.array([c.weighted for c in pool])
    chunk_rank = np.empty(n)
    chunk_rank[np.argsort(-chunk, kind="stable")] = np.arange(n)
    weighted_rank = np.empty(n)
    weighted_rank[np.argsort(-weighted, kind="stable")] = np.arange(n)
    col = {name: i for i, name in enumerate(FEATURES)}
    for i, c in enumerate(pool):
        for layer, (sim, factor) in c.terms.items():
            if layer in col:
                out[i, col[layer]] = sim * factor
        out[i, col["has_chunk"]] = 1.0 if "Chunk" in c.terms else 0.0
        out[i, col["title_in_q"]] = 1.0 if title_in_question(c.title, question) else 0.0
        out[i, col["bm25"]] = c.bm25
        out[i, col["rank_bm25"]] = 0.0 if c.bm25_rank is None else 1.0 / (1.0 + c.bm25_rank)
    out[:, col["rank_weighted"]] = 1.0 / (1.0 + weighted_rank)
    out[:, col["rank_chunk"]] = 1.0 / (1.0 + chunk_rank)
    out[:, col["weighted"]] = weighted
    out[:, col["gap_chunk"]] = chunk - chunk.max()
    out[:, col["gap_weighted"]] = weighted - weighted.max()
    return out


def score_rows(model: RankerModel, rows: np.ndarray) -> np.ndarray:
    """float64 (n,): the model's score of each feature row of ``rows`` (n, len(FEATURES))."""
    w, b = model.weights()
    return rows @ w + b if len(rows) else np.zeros(0)


def learned_order(
    store: GraphStore, settings: Settings, question: str, pool: LearnedPool, k: int, explain: bool
) -> tuple[list[str], dict[str, float], dict[str, list[RankerTerm]]]:
    """The learned ranker over ``pool`` (kbgraph.query.propagation.propagate ``learned_pool``): (its top ``k`` chunk ids,
    {chunk id: learned score}, {chunk id: feature contributions} when ``explain``). No statement (``store`` is not
    read: the signature of every ranker's order, kbgraph.query.propagation.rankers); the model is ``ranker_model``, else the
    shipped one."""
    model = load_model(settings.retrieval.ranker_model)
    pool_ids = pool.ids
    rows = feature_rows(question, pool.candidates)
    learned = score_rows(model, rows)
    order = sorted(range(len(pool_ids)), key=lambda i: (-learned[i], pool_ids[i]))[:k]
    top = [pool_ids[i] for i in order]
    ranking = {}
    if explain:
        ranking = {
            pool_ids[i]: [RankerTerm(feature=f, value=v, contribution=c) for f, v, c in model.contributions(rows[i])]
            for i in order
        }
    return top, {pool_ids[i]: float(learned[i]) for i in order}, ranking


def default_model_path() -> Path:
    """The shipped model, ``kbgraph/resources/ranker/default.json`` (package data)."""
    return Path(str(resource("ranker", "default.json")))


def load_model(path: str | Path | None = None) -> RankerModel:
    """The ranker model at ``path`` (default: the shipped one). Raises ConfigError naming the file and the
    setting ``ranker_model`` when it is missing or not a valid model."""
    p = Path(path) if path else default_model_path()
    return read_model(str(p), RankerModel, kind="ranker model", train="kbgraph rank train", fallback="weights")


def read_model(path: str, cls: type[M], *, kind: str, train: str, fallback: str) -> M:
    """The model of class ``cls`` (a pydantic model) in the JSON file ``path``, read once per process (the
    same object again after). Raises ConfigError when the file is missing or does not validate as ``cls``,
    naming the file, what it should be (``kind``, e.g. "gbm ranker model"), the command that writes one
    (``train``) and the ``KBGRAPH_RANKER`` to fall back to (``fallback``)."""
    model = _read(path, cls, kind, train, fallback)
    assert isinstance(model, cls)
    return model


@lru_cache(maxsize=16)
def _read(path: str, cls: type[BaseModel], kind: str, train: str, fallback: str) -> BaseModel:
    try:
        return cls.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise ConfigError(
            f"no {kind} at {path}: set KBGRAPH_RANKER_MODEL to a file written by `{train}`, or "
            f"KBGRAPH_RANKER={fallback}"
        ) from None
    except (ValueError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise ConfigError(
            f"{path} is not a {kind} ({first}): retrain it with `{train}` (KBGRAPH_RANKER_MODEL), "
            f"or set KBGRAPH_RANKER={fallback}"
        ) from None
