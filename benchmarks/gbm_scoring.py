"""Client CPU of the gbm ranker's scoring path per question, against the linear ranker's, on real query-time pools
(issue 39: the gbm ranker's added cost). No store: the pools are benchmarks/ranker_compare.py's dumps, the
candidates' texts the corpus passages of examples/multihop (a chunk's text = its passage's; the pools' chunks are
one per passage but for a few long passages, close enough for timing).

    nice -n 19 .venv/bin/python -m benchmarks.gbm_scoring --pools /work/recall-home/pools \
        [--sets 2wiki,musique,hotpotqa] [--questions 100] [--repeat 5]

Per question, the median over questions of the least of ``--repeat`` runs, in ms of process CPU time:

* ``linear``   ``learned_order`` (kbgraph.query.propagation.rankers: feature rows, the linear model, the top 10): the baseline;
* ``gbm``      ``gbm_order`` (the texts' facts from this process's cache, feature rows with the list features,
               the trees, the top 10), every candidate seen before (the steady state of a server);
* ``added``    gbm - linear, the figure of issue 39 (target <= 2 ms);
* ``rows``     ``facts_rows`` (the linear features and the list features), ``list`` = rows - the linear
               ``feature_rows``; ``trees`` the shipped model's ``score``;
* ``cold``     ``text_facts`` of the whole pool (what a pool of unseen candidates adds, besides the statement).

A fake store answers ``retrieve/pool_texts`` from the corpus, so no round trip is timed.
"""

from __future__ import annotations

import argparse
import gc
import json
import pickle
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from kbgraph.query.propagation import ranking_gbm
from kbgraph.query.propagation.propagate import LearnedPool
from kbgraph.query.propagation.ranking_learned import Candidate, feature_rows
from kbgraph.query.propagation.ranking_lists import facts_rows, text_facts
from kbgraph.query.propagation.rankers import learned_order
from kbgraph.settings import Settings

from benchmarks.common import corpus_path


class TextStore:
    """Answers ``retrieve/pool_texts`` (and any statement with ``ids``) from {chunk id: text}."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts
        self.statements = 0

    def run(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        self.statements += 1
        return [{"id": cid, "text": self.texts.get(cid, "")} for cid in params["ids"]]


def load(name: str, pools: Path, questions: int) -> tuple[list[tuple[str, LearnedPool]], dict[str, str]]:
    """The first ``questions`` non-empty pools of set ``name`` as (question, LearnedPool), and {chunk id: text}."""
    with open(pools / f"{name}.pkl", "rb") as f:
        graph, qpools = pickle.load(f)
    passage_text = {}
    with open(corpus_path(name), encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            passage_text[row["id"]] = row["text"]
    texts = {cid: passage_text.get(graph.doc_passage.get(doc, ""), "") for cid, doc in graph.chunk_doc.items()}
    out = []
    for p in qpools:
        if p.ids:
            out.append((p.question, LearnedPool(list(p.ids), [Candidate.model_validate(c) for c in p.candidates])))
        if len(out) == questions:
            break
    return out, texts


def best_ms(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """{name: the least CPU time of ``repeat`` calls of the function, in ms}: process CPU time (a shared machine's
    load stretches wall-clock time, not this), the functions called in turn (round robin)."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for key, fn in fns.items():
            t0 = time.process_time()
            fn()
            best[key] = min(best[key], time.process_time() - t0)
    return {key: 1000 * t for key, t in best.items()}


def time_question(question: str, pool: LearnedPool, store: Any, texts: dict[str, str], repeat: int) -> dict[str, float]:
    """The timings of one question (module docstring), in ms."""
    settings = Settings()
    gbm_settings = settings.updated({"ranker": "gbm"})
    model = ranking_gbm.load_gbm_model()
    ranking_gbm.gbm_order(store, gbm_settings, question, pool, 10, False)  # warm: every candidate's facts kept
    facts = ranking_gbm.pool_facts(store, pool)
    rows = facts_rows(question, pool.candidates, facts)
    ms = best_ms(
        {
            "linear": lambda: learned_order(store, settings, question, pool, 10, False),
            "gbm": lambda: ranking_gbm.gbm_order(store, gbm_settings, question, pool, 10, False),
            "rows": lambda: facts_rows(question, pool.candidates, facts),
            "base": lambda: feature_rows(question, pool.candidates),
            "trees": lambda: model.score(rows),
            "cold": lambda: [
                text_facts(c.title, texts.get(cid, "")) for cid, c in zip(pool.ids, pool.candidates, strict=True)
            ],
        },
        repeat,
    )
    ms["added"] = ms["gbm"] - ms["linear"]
    ms["list"] = ms["rows"] - ms["base"]
    return ms


def run(name: str, pools: Path, questions: int, repeat: int) -> dict[str, float]:
    """The medians over the first ``questions`` pools of set ``name`` (printed), in ms."""
    items, texts = load(name, pools, questions)
    gc.collect()
    gc.freeze()  # the pickled graph's objects: no garbage collection walks them while timing
    store: Any = TextStore(texts)
    got: dict[str, list[float]] = {k: [] for k in ("linear", "gbm", "added", "rows", "list", "trees", "cold")}
    for question, pool in items:
        ms = time_question(question, pool, store, texts, repeat)
        for k in got:
            got[k].append(ms[k])
    pool_size = statistics.mean(len(p.ids) for _, p in items)
    print(
        f"{name:9} {len(items):4} q  pool {pool_size:5.1f}  "
        + "  ".join(f"{k} {statistics.median(v):5.2f}" for k, v in got.items()),
        flush=True,
    )
    return {k: statistics.median(v) for k, v in got.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pools", default="/tmp/ranker-pools", help="benchmarks/ranker_compare.py's pool dumps")
    ap.add_argument("--sets", default="2wiki,musique,hotpotqa")
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"CPU ms per question (median over questions of the least of {args.repeat}); numpy {np.__version__}")
    for name in args.sets.split(","):
        run(name, Path(args.pools), args.questions, args.repeat)


if __name__ == "__main__":
    main()
