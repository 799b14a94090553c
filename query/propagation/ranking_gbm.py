"""Gradient-boosted ranking over propagation's terms and list features (setting ``ranker=gbm``).

The ``gbm`` ranker re-orders the learned ranker's pool (kbgraph.query.propagation.propagate ``learned_pool``: the best
``ranker_pool`` chunks of the weighted sum plus BM25's top ``ranker_bm25_k``) by a sum of regression trees
(LightGBM lambdarank, fitted by ``kbgraph rank train --model gbm``, kbgraph.eval.rank_train_gbm) over
:data:`kbgraph.query.propagation.ranking_lists.GBM_FEATURES`: the linear ranker's features, each layer's rank, and list
features (what a candidate is to the pool's best candidates). Unlike the linear ranker (kbgraph.query.propagation.ranking_learned)
it combines features: a hop term counts when the chunk also covers the rest of the question. The pool's texts
are one light statement (``retrieve/pool_texts``) for the candidates this process has not seen yet.

The model (:class:`GBMModel`, JSON) holds its trees as node arrays; scoring walks every tree at once with numpy
(no LightGBM at query time), and ``--explain`` splits each score exactly into an intercept plus one contribution
per feature (along each tree's path, the change of the node value at a split is credited to the split's
feature). The shipped model is package data (``kbgraph/resources/ranker/gbm.json``); a user's own is named by
``ranker_model``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, Field, PrivateAttr, model_validator

from kbgraph.query.models import RankerTerm
from kbgraph.query.propagation.ranking_learned import read_model
from kbgraph.query.propagation.ranking_lists import GBM_FEATURES, Facts, facts_rows, text_facts
from kbgraph.resources import resource
from kbgraph.settings import Settings
from kbgraph.store import GraphStore

if TYPE_CHECKING:
    from kbgraph.query.propagation.propagate import LearnedPool

#: Leaves per tree at most (a tree's leaves are bits of one int64 mask).
MAX_LEAVES = 63
#: Candidates whose lower-case title and text and names are kept for the next questions (~1.5 KB each).
CACHED_CHUNKS = 8192
_FACTS: OrderedDict[tuple[str, str], Facts] = OrderedDict()  # (chunk id, document title) -> its facts
_LOCK = threading.Lock()


class Tree(BaseModel):
    """One regression tree as node arrays (node 0 the root): a split node sends a row to ``left[i]`` when its
    value of feature ``feature[i]`` (an index into the model's ``features``) is <= ``threshold[i]``, else to
    ``right[i]``; a leaf has feature -1 and left = right = -1. ``value[i]``: the leaf's output, or for a split
    node the mean output of the rows that reached it in training (for the explanation)."""

    feature: list[int]
    threshold: list[float]
    left: list[int]
    right: list[int]
    value: list[float]

    @model_validator(mode="after")
    def _check(self) -> Tree:
        n = len(self.feature)
        if n == 0 or not (len(self.threshold) == len(self.left) == len(self.right) == len(self.value) == n):
            raise ValueError("a tree's node arrays must have the same length (> 0)")
        for i in range(n):
            leaf = self.feature[i] < 0
            kids = (self.left[i], self.right[i])
            if leaf != (kids == (-1, -1)) or (not leaf and not all(i < k < n for k in kids)):
                raise ValueError(f"node {i}: a leaf has no children, a split two later nodes")
        return self


class GBMModel(BaseModel):
    """A fitted gbm ranker: ``features`` (names, a subset of :data:`GBM_FEATURES` in any order), its trees
    (score = ``intercept`` + Σ over trees of the leaf a row reaches), and what it was fitted on."""

    kind: Literal["gbm"] = "gbm"
    features: list[str]
    trees: list[Tree]
    intercept: float = 0.0
    pool: int = Field(50, ge=1)
    trained_on: list[str] = Field(default_factory=list)
    note: str = ""
    _flat: _Compiled | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _check(self) -> GBMModel:
        unknown = [f for f in self.features if f not in GBM_FEATURES]
        if unknown or not self.features:
            raise ValueError(
                f"unknown feature(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(GBM_FEATURES)}"
            )
        for t in self.trees:
            if max(t.feature) >= len(self.features):
                raise ValueError("a tree splits on a feature the model does not list")
            if sum(1 for f in t.feature if f < 0) > MAX_LEAVES:
                raise ValueError(f"a tree has more than {MAX_LEAVES} leaves")
        return self

    def _compiled(self) -> _Compiled:
        if self._flat is None:
            self._flat = _compile(self)
        return self._flat

    def score(self, rows: np.ndarray) -> np.ndarray:
        """float64 (n,): the score of each row of ``rows`` (n, len(GBM_FEATURES)); NaN counts as 0.

        Every tree and every row at once, QuickScorer's way (Lucchese et al., SIGIR 2015): a split whose test
        fails (value > threshold) rules out the leaves of its left subtree (a bit mask per split, leaves numbered
        left to right); the leaf a row reaches is the leftmost one no failed split of its tree ruled out. Each
        distinct test is compared once for all rows; the k-th splits of all trees are applied together."""
        n = len(rows)
        c = self._compiled()
        if n == 0 or not len(c.leaves):
            return np.full(n, c.constant)
        x = np.nan_to_num(np.asarray(rows, dtype=np.float64), nan=0.0).T  # (features, n)
        failed = (x[c.columns] > c.thresholds[:, None])[c.tests].reshape(*c.clears.shape, n)  # (k, trees, n)
        out = failed[0] * c.clears[0][:, None]  # the leaves each tree's failed splits rule out, as bits
        for k in range(1, len(failed)):
            out |= failed[k] * c.clears[k][:, None]
        alive = ~out
        leaf = np.log2((alive & -alive).astype(np.float64)).astype(np.intp).T  # (n, trees): the lowest bit left
        scores: np.ndarray = c.constant + c.leaves[c.tree_index, np.ascontiguousarray(leaf)].sum(axis=1)
        return scores

    def split_counts(self) -> dict[str, int]:
        """{feature: how many splits of the trees test it}, for every feature of the model."""
        counts = dict.fromkeys(self.features, 0)
        for t in self.trees:
            for f in t.feature:
                if f >= 0:
                    counts[self.features[f]] += 1
        return counts

    def contributions(self, row: np.ndarray) -> tuple[float, list[tuple[str, float, float]]]:
        """(bias, [(feature, value, contribution)]) of one row (len(GBM_FEATURES) floats): along each tree's
        path, the change of the node value at a split is credited to the split's feature; bias = intercept + Σ
        root values. bias + Σ contributions = :meth:`score` of the row."""
        x = np.nan_to_num(np.asarray(row, dtype=np.float64), nan=0.0)
        cols = [GBM_FEATURES.index(f) for f in self.features]
        got = [0.0] * len(self.features)
        bias = self.intercept
        for t in self.trees:
            i = 0
            bias += t.value[0]
            while t.feature[i] >= 0:
                f = t.feature[i]
                nxt = t.left[i] if x[cols[f]] <= t.threshold[i] else t.right[i]
                got[f] += t.value[nxt] - t.value[i]
                i = nxt
        return bias, [(name, float(x[c]), got[k]) for k, (name, c) in enumerate(zip(self.features, cols, strict=True))]


class _Compiled(NamedTuple):
    """A model's splits for :meth:`GBMModel.score`: the distinct tests (column of GBM_FEATURES, threshold); the
    k-th split of each tree with a split (k < the most splits of a tree) as its test (``tests``, flat, k-major)
    and the bits of the leaves of its left subtree (``clears[k, tree]``, 0 past a tree's last split); each
    tree's leaf values left to right (padded); the tree of each row of ``leaves``; the constant (intercept plus
    the value of every single-leaf tree)."""

    columns: np.ndarray
    thresholds: np.ndarray
    tests: np.ndarray
    clears: np.ndarray
    leaves: np.ndarray
    tree_index: np.ndarray
    constant: float


def _compile(model: GBMModel) -> _Compiled:
    cols = [GBM_FEATURES.index(f) for f in model.features]
    splits: list[list[tuple[int, float, int]]] = []  # per tree: (column, threshold, bits of the left leaves)
    leaves: list[list[float]] = []
    constant = model.intercept
    for t in model.trees:
        order = _leaves(t, 0)  # left to right
        if len(order) == 1:
            constant += t.value[0]
            continue
        bit = {leaf: k for k, leaf in enumerate(order)}
        leaves.append([t.value[leaf] for leaf in order])
        splits.append(
            [
                (cols[f], t.threshold[i], sum(1 << bit[leaf] for leaf in _leaves(t, t.left[i])))
                for i, f in enumerate(t.feature)
                if f >= 0
            ]
        )
    width = max((len(v) for v in leaves), default=1)
    bits = np.int16 if width <= 15 else np.int32 if width <= 31 else np.int64  # the narrowest mask: less to move
    depth = max((len(s) for s in splits), default=0)
    distinct = {test: i for i, test in enumerate(dict.fromkeys((col, thr) for s in splits for col, thr, _ in s))}
    tests = np.zeros((depth, len(splits)), dtype=np.intp)
    clears = np.zeros((depth, len(splits)), dtype=bits)
    for k, s in enumerate(splits):
        for d, (col, thr, left) in enumerate(s):
            tests[d, k] = distinct[(col, thr)]
            clears[d, k] = left
    return _Compiled(
        np.array([col for col, _ in distinct], dtype=np.intp),
        np.array([thr for _, thr in distinct]),
        tests.ravel(),
        clears,
        np.array([v + [0.0] * (width - len(v)) for v in leaves]),
        np.arange(len(leaves)),
        constant,
    )


def _leaves(t: Tree, i: int) -> list[int]:
    """The leaves under node ``i`` of ``t``, left to right."""
    if t.feature[i] < 0:
        return [i]
    return _leaves(t, t.left[i]) + _leaves(t, t.right[i])


def default_gbm_path() -> Path:
    """The shipped gbm model, ``kbgraph/resources/ranker/gbm.json`` (package data)."""
    return Path(str(resource("ranker", "gbm.json")))


def default_blend_path() -> Path:
    """The blend ranker's shipped gbm model, ``kbgraph/resources/ranker/blend.json`` (package data): fitted on the
    heads of the shipped learned ranker (kbgraph.query.propagation.ranking_blend)."""
    return Path(str(resource("ranker", "blend.json")))


def load_gbm_model(path: str | Path | None = None) -> GBMModel:
    """The gbm model at ``path`` (default: the shipped one). Raises ConfigError naming the file and the settings
    ``ranker_model`` / ``ranker`` when it is missing or not a gbm model."""
    return read_model(
        str(Path(path) if path else default_gbm_path()),
        GBMModel,
        kind="gbm ranker model",
        train="kbgraph rank train --model gbm",
        fallback="learned",
    )


def pool_texts(store: GraphStore, ids: Sequence[str]) -> list[str]:
    """The text of each chunk of ``ids`` ("" for a chunk the store does not have), in order: one statement
    (``retrieve/pool_texts``)."""
    if not ids:
        return []
    got = {row["id"]: str(row.get("text") or "") for row in store.run("retrieve/pool_texts", {"ids": list(ids)})}
    return [got.get(cid, "") for cid in ids]


def pool_facts(store: GraphStore, pool: LearnedPool) -> list[Facts]:
    """The :data:`~kbgraph.query.propagation.ranking_lists.Facts` of each candidate of ``pool``, in order: kept in this
    process for the last :data:`CACHED_CHUNKS` chunks (a chunk id names its text: ``stable_id('chunk',
    document, order, sha256(text))``), the others' texts read by ``pool.read_texts`` (the adjacency's) or
    with :func:`pool_texts` (one statement, none when every candidate is kept)."""
    keys = [(cid, c.title) for cid, c in zip(pool.ids, pool.candidates, strict=True)]
    with _LOCK:
        missing = [key for key in keys if key not in _FACTS]
    if missing:
        if pool.read_texts is not None:  # the adjacency's (kbgraph.query.propagation.adjacency): no statement
            texts = pool.read_texts([cid for cid, _ in missing])
        else:
            texts = pool_texts(store, [cid for cid, _ in missing])
        new = {key: text_facts(key[1], text) for key, text in zip(missing, texts, strict=True)}
    with _LOCK:
        if missing:
            _FACTS.update(new)
        for key in keys:
            _FACTS.move_to_end(key)
        got = [_FACTS[key] for key in keys]
        while len(_FACTS) > CACHED_CHUNKS:
            _FACTS.popitem(last=False)
    return got


def gbm_rows(store: GraphStore, question: str, pool: LearnedPool, base: np.ndarray | None = None) -> np.ndarray:
    """float64 (len(pool.ids), len(GBM_FEATURES)): the gbm ranker's feature rows of the learned pool
    (kbgraph.query.propagation.ranking_lists ``list_rows``), its candidates' texts from :func:`pool_facts`; ``base``: the
    pool's linear feature rows when already computed (kbgraph.query.propagation.ranking_learned ``feature_rows``)."""
    return facts_rows(question, pool.candidates, pool_facts(store, pool), base)


def gbm_order(
    store: GraphStore, settings: Settings, question: str, pool: LearnedPool, k: int, explain: bool
) -> tuple[list[str], dict[str, float], dict[str, list[RankerTerm]]]:
    """The gbm ranker over ``pool`` (kbgraph.query.propagation.propagate ``learned_pool``): (its top ``k`` chunk ids, {chunk
    id: gbm score}, {chunk id: the score's split, an ``intercept`` term first, when ``explain``}). At most one
    statement (the texts of candidates not seen before, :func:`pool_facts`); the model is ``ranker_model``, else
    the shipped one."""
    model = load_gbm_model(settings.retrieval.ranker_model)
    ids = pool.ids
    rows = gbm_rows(store, question, pool)
    scores = model.score(rows)
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))[:k]
    ranking = {}
    if explain:
        for i in order:
            bias, parts = model.contributions(rows[i])
            ranking[ids[i]] = [
                RankerTerm(feature="intercept", value=1.0, contribution=bias),
                *(RankerTerm(feature=f, value=v, contribution=c) for f, v, c in parts),
            ]
    return [ids[i] for i in order], {ids[i]: float(scores[i]) for i in order}, ranking
