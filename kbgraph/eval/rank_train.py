"""Fitting the learned ranker (kbgraph.query.propagation.ranking_learned) on labelled questions: ``kbgraph rank train``.

For each question of a data set (kbgraph.eval.dataset: questions with ``gold_passage_ids`` and a passage
corpus), the learned ranker's pool is built exactly as at query time (kbgraph.query.propagation.propagate
``learned_pool``: the best ``pool`` chunks of the weighted sum plus BM25's top ``ranker_bm25_k``, with their
terms); a chunk is labelled 1 when its passage is gold. The pools of every data set
together fit a logistic regression (scikit-learn, the ``eval`` extra) on standardised feature rows
(``kbgraph.query.propagation.ranking_learned.feature_rows``); the model is written as JSON (:class:`RankerModel`) and used at query
time with ``KBGRAPH_RANKER_MODEL=<file>`` and ``KBGRAPH_RANKER=learned``.

``leave_one_out`` scores each data set with a model fitted on the others: the figure that says how a model
generalises to a corpus it has not seen (docs/benchmarks.md#recall-per-method).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from kbgraph.errors import ConfigError
from kbgraph.eval.dataset import Dataset
from kbgraph.eval.metrics import passage_id, recall_at_k
from kbgraph.query.graph import chunk_details
from kbgraph.query.propagation.adjacency_cache import shared_adjacency
from kbgraph.query.propagation.propagate import LearnedPool, learned_pool, score_terms
from kbgraph.query.propagation.seeding import seed_layers
from kbgraph.query.propagation.ranking_learned import FEATURES, RankerModel, feature_rows, score_rows
from kbgraph.query.propagation.ranking_gbm import GBMModel

if TYPE_CHECKING:
    from kbgraph.eval.target import EvalTarget

#: Regularisation of the logistic regression (inverse strength, scikit-learn's C).
DEFAULT_C = 1.0


@dataclass
class LabelledPool:
    """One question's candidate pool: feature rows float64 (n, len(FEATURES)), labels int (n,) (1 = the chunk's
    passage is gold), the chunks' passage ids in pool order, and the gold passage ids."""

    rows: np.ndarray
    labels: np.ndarray
    passages: list[str]
    gold: list[str]


def collect_pools(
    kb: EvalTarget,
    ds: Dataset,
    *,
    pool: int,
    limit: int | None = None,
    log: Callable[[str], None] | None = None,
    rows: Callable[[str, LearnedPool], np.ndarray] | None = None,
    select: Callable[[str, LearnedPool], tuple[list[int], np.ndarray]] | None = None,
) -> list[LabelledPool]:
    """The labelled pools of ``ds``'s questions (the first ``limit``) on ``kb`` (its corpus already ingested).

    Args:
        kb: the knowledge base of ``ds``'s corpus (kbgraph.eval.target ``EvalTarget``: store, settings, embedder).
        ds: the data set; questions without ``gold_passage_ids`` are left out.
        pool: ``ranker_pool``: the query-time pool of the learned ranker is built with it and ``kb``'s other
            settings (BM25 additions with ``ranker_bm25_k``).
        limit: only the first ``limit`` questions (with gold passages).
        log: called with a progress line every 100 questions.
        rows: (question, pool) -> float64 feature rows (n, features) of the pool: the gbm ranker's
            (kbgraph.eval.rank_train_gbm); default the linear ranker's (``feature_rows``).
        select: (question, pool) -> (the positions of the pool to keep, in pool order; their feature rows):
            the blend ranker's head (kbgraph.eval.rank_train_blend), instead of ``rows``. Default: the whole pool.

    Returns:
        One :class:`LabelledPool` per question, in the data set's order (empty rows when its pool is empty).
    """
    settings = kb.settings.updated({"ranker": "learned", "ranker_pool": pool})
    # every index serving first: a server that has just loaded the knowledge base rebuilds its vector and
    # full-text indexes in the background, and the questions asked meanwhile would get other seeds
    kb.store.await_indexes()
    out = []
    questions = [q for q in ds.questions if q.gold_passage_ids][:limit]
    for i, q in enumerate(questions):
        qvec = kb.embedder.embed([q.question])[0].tolist()
        seeds = seed_layers(kb.store, settings, q.question, qvec)
        # the adjacency as propagate reads it once built (built here, before the first question: a question asked
        # while it builds reads the store, whose similarities differ in the last bits, and the pools would vary)
        view = shared_adjacency(kb.store, settings, seeds.generation, wait=True)
        terms, scores, ranked, similarity = score_terms(kb.store, settings, seeds, k=pool, view=view)
        found = learned_pool(kb.store, settings, seeds, ranked, terms, scores, pool, similarity) if ranked else None
        selected = None
        if found and select is not None:
            kept, selected = select(q.question, found)
            found = type(found)(
                ids=[found.ids[i] for i in kept],
                candidates=[found.candidates[i] for i in kept],
                read_texts=found.read_texts,
            )
        ids, cands = (found.ids, found.candidates) if found else ([], [])
        details = view.details(ids) if view is not None else chunk_details(kb.store, ids)  # the same rows
        uris = {cid: row.get("document_uri") or "" for cid, row in details.items()}
        passages = [passage_id(uris[c]) if uris.get(c) else "" for c in ids]
        gold = set(q.gold_passage_ids)
        if selected is not None:
            found_rows = selected
        elif rows is not None and found:
            found_rows = rows(q.question, found)
        else:
            found_rows = feature_rows(q.question, cands)
        out.append(
            LabelledPool(
                rows=found_rows,
                labels=np.array([1 if p in gold else 0 for p in passages]),
                passages=passages,
                gold=list(q.gold_passage_ids),
            )
        )
        if log and (i + 1) % 100 == 0:
            log(f"{ds.name}: {i + 1}/{len(questions)} questions")
    return out


def fit(
    by_set: Mapping[str, Sequence[LabelledPool]], *, pool: int, c: float = DEFAULT_C, features: Sequence[str] = FEATURES
) -> RankerModel:
    """A :class:`RankerModel` fitted on the pools of every data set of ``by_set`` ({name: pools}; logistic
    regression, L2 with inverse strength ``c``, on the ``features`` standardised). Each data set weighs the
    same in the fit, whatever its number of questions (a 500-question set does not drown a 100-question one).
    Raises ConfigError without scikit-learn or without both labels."""
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        raise ConfigError("fitting a ranker needs scikit-learn: pip install 'kbgraph[eval]'") from None
    cols = [FEATURES.index(f) for f in features]
    xs, ys, ws = [], [], []
    for pools in by_set.values():
        pools = [p for p in pools if len(p.rows)]
        for p in pools:
            xs.append(p.rows[:, cols])
            ys.append(p.labels)
            ws.append(np.full(len(p.labels), 1.0 / len(pools)))
    if not xs or len(set(np.concatenate(ys).tolist())) < 2:
        raise ConfigError(
            "the training pools need both gold and non-gold chunks: are the data sets' corpora "
            "ingested, and do their gold_passage_ids name corpus passages?"
        )
    x, y, w = np.vstack(xs), np.concatenate(ys), np.concatenate(ws)
    w = w * len(w) / w.sum()
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    model = LogisticRegression(C=c, max_iter=5000).fit((x - mean) / scale, y, sample_weight=w)
    return RankerModel(
        features=list(features),
        mean=mean.tolist(),
        scale=scale.tolist(),
        coef=model.coef_[0].tolist(),
        intercept=float(model.intercept_[0]),
        pool=pool,
        trained_on=list(by_set),
    )


def recall(
    pools: Sequence[LabelledPool], model: RankerModel | GBMModel | None, ks: Sequence[int] = (1, 2, 5, 10)
) -> dict[str, float]:
    """{"R@k": mean passage recall in %} of ``pools`` ordered by ``model`` (None: the weighted sum's order,
    i.e. pool order; a GBMModel scores pools of gbm rows), over distinct passages as kbgraph.eval counts them."""
    got: dict[int, list[float]] = {k: [] for k in ks}
    for p in pools:
        if model is None:
            order = list(range(len(p.passages)))
        else:
            s = model.score(p.rows) if isinstance(model, GBMModel) else score_rows(model, p.rows)
            order = sorted(range(len(p.passages)), key=lambda i: (-s[i], i))
        ranked = [p.passages[i] for i in order if p.passages[i]]
        for k in ks:
            r = recall_at_k(ranked, p.gold, k)
            if r is not None:
                got[k].append(r)
    return {f"R@{k}": 100.0 * float(np.mean(v)) if v else 0.0 for k, v in got.items()}


def leave_one_out(
    by_set: dict[str, list[LabelledPool]], *, pool: int, c: float = DEFAULT_C, features: Sequence[str] = FEATURES
) -> dict[str, dict[str, dict[str, float]]]:
    """For each data set: recall with the weighted sum ("weights"), with a model fitted on every set ("in_set")
    and with a model fitted on the other sets only ("leave_one_out"; absent with one set); the models use
    ``features`` (a subset of FEATURES)."""
    return loso_table(by_set, lambda sets: fit(sets, pool=pool, c=c, features=features))


def loso_table(
    by_set: dict[str, list[LabelledPool]],
    fit_sets: Callable[[dict[str, list[LabelledPool]]], RankerModel | GBMModel],
) -> dict[str, dict[str, dict[str, float]]]:
    """``leave_one_out``'s table for any model: ``fit_sets(sets)`` fits one on the pools of ``sets``."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    every = fit_sets(by_set)
    for name, pools in by_set.items():
        row = {"weights": recall(pools, None), "in_set": recall(pools, every)}
        others = {other: ps for other, ps in by_set.items() if other != name}
        if others:
            row["leave_one_out"] = recall(pools, fit_sets(others))
        out[name] = row
    return out


def write_model(model: RankerModel | GBMModel, path: str | Path) -> Path:
    """Write ``model`` as JSON to ``path`` (parent folders made; a gbm model on one line); the path written. Use
    it with ``KBGRAPH_RANKER_MODEL=<path>`` and ``KBGRAPH_RANKER=learned`` (``gbm`` for a gbm model)."""
    p = Path(path).expanduser()
    p.parent.mkdir(parents=True, exist_ok=True)
    indent = None if isinstance(model, GBMModel) else 1
    p.write_text(json.dumps(model.model_dump(), indent=indent) + "\n", encoding="utf-8")
    return p
