"""Features, models and recall for benchmarks/ranker_compare.py (offline, on dumped query-time pools).

Feature sets (each one extends the previous):

* ``base``  the shipped linear ranker's features (kbgraph.query.propagation.ranking_learned.FEATURES), unchanged.
* ``rank``  + each layer's rank within the pool (1 / (1 + rank) by the layer's term, 0 without the term).
* ``list``  + list features: how a candidate relates to the pool's anchors, the candidates a ranker trusts before
            ordering (those whose title the question names, the top 3 by Chunk similarity, by weighted sum and
            by BM25): shares a rare entity with an anchor (max 1/log2(1+degree)); is named by an anchor (the
            anchor MENTIONS a TITLE entity equal to the candidate's document title: the title hop, but from the
            anchors rather than S1's top); names an anchor's title; its title is the object of a triple of an
            anchor (the chain of a multi-hop question); plus the question-entity overlap, the number of pool
            candidates naming its title, and its rank among the pool chunks of its own document.

Models: ``linear`` (logistic regression, as kbgraph.eval.rank_train.fit), ``lgbm`` (LightGBM lambdarank, one
group per question), ``hgb`` (scikit-learn HistGradientBoostingClassifier, pointwise). Every fit weighs each
training set the same whatever its number of questions.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kbgraph.eval.metrics import recall_at_k
from kbgraph.query.propagation.ranking_lists import GBM_FEATURES, list_rows
from kbgraph.query.propagation.ranking_learned import FEATURES, LAYERS, Candidate, feature_rows
from kbgraph.ingest.distill.names import normalize_name
from kbgraph.text import strip_disambiguator


@dataclass
class GraphData:
    """What list features read from a knowledge base: chunk -> document id, document -> title and passage id,
    entity id -> (name, type, degree), chunk -> entity ids it MENTIONS, chunk -> [(subject id, object id)] of its
    triples, and the entity hop's degree cap."""

    chunk_doc: dict[str, str]
    doc_title: dict[str, str]
    doc_passage: dict[str, str]
    entity: dict[str, tuple[str, str, int]]
    mentions: dict[str, list[str]]
    triples: dict[str, list[tuple[str, str]]]
    max_degree: int = 100
    norm: dict[str, str] | None = None


@dataclass
class QuestionPool:
    """One question: gold passage ids, the dense list (chunk ids), BM25's list ((chunk id, score)), and the
    learned ranker's pool: chunk ids, their Candidate dumps and texts, in the weighted sum's order."""

    question: str
    gold: list[str]
    dense: list[str]
    bm25: list[tuple[str, float]]
    ids: list[str]
    candidates: list[dict[str, Any]]
    texts: list[str] = field(default_factory=list)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)


ANCHORS = ("q", "chunk", "weighted", "bm25")
RELATIONS = ("ent", "named_by", "names", "obj", "bridge", "pair_cover")
EXTRAS = ("q_entities", "in_links", "doc_rank", "q_cover")
RANK_FEATURES = tuple(f"rank_{layer}" for layer in LAYERS if layer != "Chunk")
LIST_FEATURES = (*(f"{r}_{a}" for a in ANCHORS for r in RELATIONS), *EXTRAS)
STAGE_FEATURES = tuple(f"{r}_stage1" for r in RELATIONS)
EVERY = (*FEATURES, *RANK_FEATURES, *LIST_FEATURES, *STAGE_FEATURES)
_V1 = ("ent", "named_by", "names", "obj")
SETS_OF_FEATURES = {
    "base": FEATURES,
    "rank": (*FEATURES, *RANK_FEATURES),
    "list": (*FEATURES, *RANK_FEATURES, *(f"{r}_{a}" for a in ANCHORS for r in _V1), *EXTRAS[:3]),
    "list2": (*FEATURES, *RANK_FEATURES, *LIST_FEATURES),
    "stage": EVERY,
}


def feature_set(spec: str) -> tuple[str, ...]:
    """The features of ``spec``: a name of SETS_OF_FEATURES, optionally followed by "-<relation or feature>"
    parts to leave out ("list2-ent-bridge": list2 without the ent_* and bridge_* features)."""
    name, *drop = spec.split("-")
    return tuple(f for f in SETS_OF_FEATURES[name] if not any(f == d or f.startswith(d + "_") for d in drop))


POOL_DEGREE = bool(os.environ.get("RANKER_POOL_DEGREE"))
_STEM: Any = None
_STOP: frozenset[str] = frozenset()


def _norm(title: str) -> str:
    return normalize_name(strip_disambiguator(title or ""))


def _words(text: str) -> set[str]:
    global _STEM, _STOP
    if _STEM is None:
        import Stemmer
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        _STEM, _STOP = Stemmer.Stemmer("english"), frozenset(ENGLISH_STOP_WORDS)
    return {_STEM.stemWord(w) for w in re.findall(r"\w+", text.lower()) if len(w) >= 3 and w not in _STOP}


def passages_of(chunks: Sequence[str], graph: GraphData) -> list[str]:
    """Passage id of each chunk id ("" when unknown)."""
    return [graph.doc_passage.get(graph.chunk_doc.get(c, ""), "") for c in chunks]


def recall_of(pools: Sequence[QuestionPool], graph: GraphData, key: str, ks: Sequence[int]) -> dict[int, float]:
    """Mean passage recall (%) at each k of the ``dense`` or ``bm25`` list of each question."""
    out: dict[int, list[float]] = {k: [] for k in ks}
    for p in pools:
        chunks = p.dense if key == "dense" else [c for c, _ in p.bm25]
        ranked = [x for x in passages_of(chunks, graph) if x]
        for k in ks:
            r = recall_at_k(ranked, p.gold, k)
            if r is not None:
                out[k].append(r)
    return {k: 100.0 * float(np.mean(v)) for k, v in out.items()}


def rows_of(p: QuestionPool, graph: GraphData, stage1: np.ndarray | None = None) -> np.ndarray:
    """float64 (len(pool), len(EVERY)): every feature of every candidate (the stage-1 block from the first-stage
    scores ``stage1``, zeros without them); all but the stage-1 block cached."""
    if "rows" not in p._cache:
        cands = [Candidate.model_validate(c) for c in p.candidates]
        base = feature_rows(p.question, cands)
        n = len(cands)
        rank = np.zeros((n, len(RANK_FEATURES)))
        for j, layer in enumerate(layer for layer in LAYERS if layer != "Chunk"):
            v = np.array([c.terms[layer][0] * c.terms[layer][1] if layer in c.terms else 0.0 for c in cands])
            r = np.empty(n)
            r[np.argsort(-v, kind="stable")] = np.arange(n)
            rank[:, j] = np.where(v > 0, 1.0 / (1.0 + r), 0.0)
        p._cache["rows"] = (
            np.hstack([base, rank, list_features(p, base, graph)])
            if n
            else np.zeros((0, len(EVERY) - len(STAGE_FEATURES)))
        )
    rows = p._cache["rows"]
    block = np.zeros((len(rows), len(STAGE_FEATURES)))
    if stage1 is not None and len(rows):
        block = _relations(p, graph, list(np.argsort(-stage1, kind="stable")[:3]))
    return np.hstack([rows, block])


def text_rows(p: QuestionPool) -> np.ndarray:
    """kbgraph.query.propagation.ranking_gbm.list_rows of the pool (cached)."""
    if "text_rows" not in p._cache:
        p._cache["text_rows"] = list_rows(p.question, [Candidate.model_validate(c) for c in p.candidates], p.texts)
    return p._cache["text_rows"]


def _prep(p: QuestionPool, graph: GraphData) -> dict[str, Any]:
    if "prep" in p._cache:
        return p._cache["prep"]
    if graph.norm is None:
        graph.norm = {e: _norm(v[0]) for e, v in graph.entity.items()}
    norm = graph.norm
    docs = [graph.chunk_doc.get(c, "") for c in p.ids]
    titles = [_norm(graph.doc_title.get(d, "")) for d in docs]
    q = p.question.lower()
    ents, named, objects, words = [], [], [], []
    for i, cid in enumerate(p.ids):
        es = [e for e in graph.mentions.get(cid, []) if e in graph.entity]
        ents.append({e: graph.entity[e][2] for e in es if graph.entity[e][2] <= graph.max_degree})
        named.append({norm[e] for e in es if graph.entity[e][1] == "TITLE"})
        objects.append({norm[o] for _, o in graph.triples.get(cid, []) if o in norm})
        words.append(_words(graph.doc_title.get(docs[i], "") + " " + (p.texts[i] if i < len(p.texts) else "")))
    if POOL_DEGREE:  # an entity's degree = the number of pool chunks that mention it (no graph degree)
        count: dict[str, int] = {}
        for cid in p.ids:
            for e in set(graph.mentions.get(cid, [])):
                count[e] = count.get(e, 0) + 1
        ents = [{e: count[e] for e in set(graph.mentions.get(cid, [])) if e in graph.entity} for cid in p.ids]
    in_q = {e for es in ents for e in es if len(graph.entity[e][0]) >= 3 and _word_in(graph.entity[e][0].lower(), q)}
    prep = {
        "docs": docs,
        "titles": titles,
        "ents": ents,
        "named": named,
        "objects": objects,
        "words": words,
        "qwords": _words(p.question),
        "in_q": in_q,
    }
    p._cache["prep"] = prep
    return prep


def _relations(p: QuestionPool, graph: GraphData, anchors: Sequence[int]) -> np.ndarray:
    """float64 (n, len(RELATIONS)): each candidate's relations to the anchor candidates ``anchors`` (indices)."""
    pr = _prep(p, graph)
    docs, titles, ents, named, objects, words = (pr[k] for k in ("docs", "titles", "ents", "named", "objects", "words"))
    qw, in_q = pr["qwords"], pr["in_q"]
    n = len(p.ids)
    out = np.zeros((n, len(RELATIONS)))
    for i in range(n):
        for j in anchors:
            if docs[j] == docs[i]:
                continue
            for e in ents[i].keys() & ents[j].keys():
                v = 1.0 / math.log2(1 + max(1, ents[i][e]))
                out[i, 0] = max(out[i, 0], v)
                if e not in in_q:
                    out[i, 4] = max(out[i, 4], v)
            if titles[i] and titles[i] in named[j]:
                out[i, 1] = 1.0
            if titles[j] and titles[j] in named[i]:
                out[i, 2] = 1.0
            if titles[i] and titles[i] in objects[j]:
                out[i, 3] = 1.0
            if qw:
                out[i, 5] = max(out[i, 5], len(qw & (words[i] | words[j])) / len(qw))
    return out


def list_features(p: QuestionPool, base: np.ndarray, graph: GraphData) -> np.ndarray:
    """float64 (n, len(LIST_FEATURES)) for the pool (see the module docstring)."""
    n = len(p.ids)
    col = {f: i for i, f in enumerate(FEATURES)}
    top = 3
    anchors = {
        "q": [i for i in range(n) if base[i, col["title_in_q"]] > 0],
        "chunk": list(np.argsort(-base[:, col["Chunk"]], kind="stable")[:top]),
        "weighted": list(range(min(top, n))),
        "bm25": [
            i for i in np.argsort(-base[:, col["rank_bm25"]], kind="stable")[:top] if base[i, col["rank_bm25"]] > 0
        ],
    }
    blocks = [_relations(p, graph, anchors[a]) for a in ANCHORS]
    pr = _prep(p, graph)
    docs, titles, named, ents, words, qw = pr["docs"], pr["titles"], pr["named"], pr["ents"], pr["words"], pr["qwords"]
    extra = np.zeros((n, len(EXTRAS)))
    seen: dict[str, int] = {}
    for i in range(n):
        names = [graph.entity[e][0] for e in ents[i] if len(graph.entity[e][0]) >= 3]
        extra[i, 0] = sum(1 for e in ents[i] if e in pr["in_q"]) / len(names) if names else 0.0
        extra[i, 1] = sum(1 for j in range(n) if docs[j] != docs[i] and titles[i] and titles[i] in named[j])
        extra[i, 2] = seen.get(docs[i], 0)
        seen[docs[i]] = seen.get(docs[i], 0) + 1
        extra[i, 3] = len(qw & words[i]) / len(qw) if qw else 0.0
    return np.hstack([*blocks, extra])


def _word_in(needle: str, hay: str) -> bool:
    return needle in hay and re.search(r"(?<!\w)" + re.escape(needle) + r"(?!\w)", hay) is not None


def labels_of(p: QuestionPool, graph: GraphData) -> np.ndarray:
    gold = set(p.gold)
    return np.array([1 if x in gold else 0 for x in passages_of(p.ids, graph)])


def _stack(
    data: dict[str, tuple[GraphData, list[QuestionPool]]],
    names: Sequence[str],
    rows: Callable[[QuestionPool, GraphData], np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    xs, ys, ws, groups = [], [], [], []
    for name in names:
        graph, pools = data[name]
        pools = [p for p in pools if p.ids]
        for p in pools:
            xs.append(rows(p, graph))
            ys.append(labels_of(p, graph))
            ws.append(np.full(len(p.ids), 1.0 / len(pools)))
            groups.append(len(p.ids))
    w = np.concatenate(ws)
    return np.vstack(xs), np.concatenate(ys), w * len(w) / w.sum(), groups


Ranker = Callable[[QuestionPool, GraphData], np.ndarray]


def make_ranker(
    kind: str, fs: str, data: dict[str, tuple[GraphData, list[QuestionPool]]], names: Sequence[str]
) -> Ranker:
    """A ranker (pool, graph) -> scores (n,) of model ``kind`` on feature set ``fs``, fitted on the sets
    ``names`` of ``data``; with ``fs`` "stage", the stage-1 anchors are the top 3 of a linear model on the base
    features fitted on the same sets; a spec ending in "+z" (not "text") adds each similarity term's z-score over
    its pool (query-level normalisation: the layers' terms, ``weighted`` and ``bm25``)."""
    if fs.startswith(
        "text"
    ):  # the shipped gbm ranker's features (kbgraph.query.propagation.ranking_gbm), from texts only
        keep = [
            GBM_FEATURES.index(f)
            for f in GBM_FEATURES
            if not any(f == d or f.startswith(d + "_") for d in fs.split("-")[1:])
        ]
        text_scorer = fit_model(kind, *_stack(data, names, lambda p, g: text_rows(p)[:, keep]))
        return lambda p, g: text_scorer(text_rows(p)[:, keep])
    pool_z = fs.endswith("+z")
    fs = fs.removesuffix("+z")
    cols = [EVERY.index(f) for f in feature_set(fs)]
    base_cols = [EVERY.index(f) for f in FEATURES]
    terms = [EVERY.index(f) for f in FEATURES if f[0].isupper() or f in ("weighted", "bm25")]
    first: Ranker | None = None
    if fs == "stage":
        lin = fit_model("linear", *_stack(data, names, lambda p, g: rows_of(p, g)[:, base_cols]))
        first = lambda p, g: lin(rows_of(p, g)[:, base_cols])  # noqa: E731

    def rows(p: QuestionPool, g: GraphData) -> np.ndarray:
        every = rows_of(p, g, first(p, g) if first is not None else None)
        if not pool_z:
            return every[:, cols]
        x = every[:, terms]
        sd = x.std(axis=0)
        return np.hstack([every[:, cols], (x - x.mean(axis=0)) / np.where(sd < 1e-9, 1.0, sd)])

    scorer = fit_model(kind, *_stack(data, names, rows))
    return lambda p, g: scorer(rows(p, g))


def fit_model(kind: str, x: np.ndarray, y: np.ndarray, w: np.ndarray, groups: list[int]) -> Any:
    """A scorer: a callable float64 (n, d) -> (n,)."""
    if kind == "linear":
        from sklearn.linear_model import LogisticRegression

        mean, scale = x.mean(axis=0), x.std(axis=0)
        scale[scale < 1e-9] = 1.0
        m = LogisticRegression(C=1.0, max_iter=5000).fit((x - mean) / scale, y, sample_weight=w)
        return lambda z: m.decision_function((z - mean) / scale)
    if kind.startswith("lgbm"):
        import lightgbm as lgb

        params = dict(
            objective="lambdarank",
            n_estimators=300,
            learning_rate=0.05,
            num_leaves=15,
            min_child_samples=50,
            subsample=0.8,
            subsample_freq=1,
            colsample_bytree=0.8,
            reg_lambda=1.0,
            n_jobs=1,
            verbose=-1,
            random_state=0,
            lambdarank_truncation_level=20,
        )
        if ":" in kind:  # lgbm:n_estimators=150+num_leaves=7
            for kv in kind.split(":", 1)[1].split("+"):
                key, value = kv.split("=")
                params[key] = float(value) if "." in value else int(value)
            kind = kind.split(":", 1)[0]
        if kind == "lgbm-bin":
            params.update(objective="binary")
            params.pop("lambdarank_truncation_level")
            m = lgb.LGBMClassifier(**params).fit(x, y, sample_weight=w)
            return lambda z: m.predict_proba(z)[:, 1]
        m = lgb.LGBMRanker(**params).fit(x, y, sample_weight=w, group=groups)
        return lambda z: m.predict(z)
    if kind == "hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier

        m = HistGradientBoostingClassifier(
            max_iter=300,
            learning_rate=0.05,
            max_leaf_nodes=15,
            min_samples_leaf=50,
            l2_regularization=1.0,
            random_state=0,
        ).fit(x, y, sample_weight=w)
        return lambda z: m.predict_proba(z)[:, 1]
    raise ValueError(kind)


def recall_model(
    pools: Sequence[QuestionPool], graph: GraphData, ranker: Ranker, ks: Sequence[int]
) -> dict[int, float]:
    """Mean passage recall (%) at each k of the pools ordered by ``ranker`` (ties: pool order)."""
    out: dict[int, list[float]] = {k: [] for k in ks}
    for p in pools:
        if p.ids:
            s = ranker(p, graph)
            order = sorted(range(len(p.ids)), key=lambda i: (-s[i], i))
            ranked = [x for x in passages_of([p.ids[i] for i in order], graph) if x]
        else:
            ranked = []
        for k in ks:
            r = recall_at_k(ranked, p.gold, k)
            if r is not None:
                out[k].append(r)
    return {k: 100.0 * float(np.mean(v)) for k, v in out.items()}


def run_models(
    data: dict[str, tuple[GraphData, list[QuestionPool]]],
    models: Sequence[str],
    feature_sets: Sequence[str],
    ks: Sequence[int],
) -> dict[tuple[str, str], tuple[dict[int, float], dict[int, float]]]:
    """{(set, "model/features"): (in-set recall, leave-one-set-out recall)} for every model and feature set."""
    out = {}
    for fs in feature_sets:
        for kind in models:
            every = make_ranker(kind, fs, data, list(data))
            for name, (graph, pools) in data.items():
                held = make_ranker(kind, fs, data, [o for o in data if o != name])
                out[(name, f"{kind}/{fs}")] = (
                    recall_model(pools, graph, every, ks),
                    recall_model(pools, graph, held, ks),
                )
    return out
